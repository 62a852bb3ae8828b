//! The parts of a team's gateway, started by the tests: a real
//! `redis-server` and a real HAProxy on free loopback ports, each in the
//! test's own temporary folder, reaped on drop.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{free_port, wait_port, Proc};

/// Debian's `redis-server` (`.ci/run` installs it).
fn redis_binary() -> PathBuf {
    which("redis-server")
}

/// Debian's `haproxy`, in `/usr/sbin`.
fn haproxy_binary() -> PathBuf {
    which("haproxy")
}

fn which(name: &str) -> PathBuf {
    for dir in ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} is missing: install Debian's {name} package (.ci/run does)");
}

/// A Redis server of the test's own.
pub struct Redis {
    pub proc: Proc,
    pub port: u16,
    dir: PathBuf,
    password: Option<String>,
}

impl Redis {
    pub async fn start(dir: &Path, password: Option<&str>) -> Redis {
        Self::start_on(dir, free_port(), password).await
    }

    /// Starts (or starts again) on `port`, with nothing saved to disk.
    pub async fn start_on(dir: &Path, port: u16, password: Option<&str>) -> Redis {
        let dir = dir.join(format!("redis-{port}"));
        std::fs::create_dir_all(&dir).expect("redis folder");
        let mut cmd = Command::new(redis_binary());
        cmd.arg("--port")
            .arg(port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir);
        if let Some(pw) = password {
            cmd.arg("--requirepass").arg(pw);
        }
        let proc = Proc::spawn("redis-server", cmd, &dir.join("redis.log"));
        wait_port(port, Duration::from_secs(20)).await;
        Redis {
            proc,
            port,
            dir: dir.parent().expect("the test folder").to_owned(),
            password: password.map(str::to_owned),
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// A server that speaks TLS only, with a certificate for 127.0.0.1
    /// signed by a CA made now; returns it and the CA's PEM file.
    pub async fn start_tls(dir: &Path, password: &str) -> (Redis, PathBuf) {
        let port = free_port();
        let certs = dir.join("redis-tls");
        std::fs::create_dir_all(&certs).expect("certificate folder");
        let ca = make_certificates(&certs);
        let mut cmd = Command::new(redis_binary());
        cmd.args(["--port", "0", "--tls-port"])
            .arg(port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--tls-cert-file")
            .arg(certs.join("server.crt"))
            .arg("--tls-key-file")
            .arg(certs.join("server.key"))
            .arg("--tls-ca-cert-file")
            .arg(&ca)
            .args(["--tls-auth-clients", "no", "--requirepass", password])
            .arg("--dir")
            .arg(&certs);
        let proc = Proc::spawn("redis-server (TLS)", cmd, &certs.join("redis.log"));
        wait_port(port, Duration::from_secs(20)).await;
        let redis = Redis {
            proc,
            port,
            dir: dir.to_owned(),
            password: Some(password.to_owned()),
        };
        (redis, ca)
    }

    pub fn tls_url(&self) -> String {
        format!("rediss://127.0.0.1:{}/0", self.port)
    }

    /// Kills the server (SIGKILL: nothing is saved, as in a crash).
    pub fn kill(&mut self) {
        self.proc.signal_group(libc::SIGKILL);
        let _ = self.proc.child.wait();
    }

    /// A fresh server on the same port, empty.
    pub async fn restart(&mut self) {
        self.kill();
        let again = Redis::start_on(&self.dir, self.port, self.password.as_deref()).await;
        *self = again;
    }
}

/// A CA and a server certificate for 127.0.0.1 it signed, made with
/// Debian's `openssl`, in `dir`; returns the CA's PEM file.
fn make_certificates(dir: &Path) -> PathBuf {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs (Debian's openssl package)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=mcpyard test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").expect("write san.ext");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    dir.join("ca.crt")
}

/// HAProxy in round-robin over the replicas, no stickiness: consecutive
/// requests of one client go to different replicas.
pub struct Balancer {
    pub proc: Proc,
    pub port: u16,
}

impl Balancer {
    pub async fn start(dir: &Path, replicas: &[u16]) -> Balancer {
        let port = free_port();
        let servers: String = replicas
            .iter()
            .enumerate()
            .map(|(i, p)| format!("  server r{i} 127.0.0.1:{p} check inter 500ms fall 1 rise 2\n"))
            .collect();
        // Each request is balanced on its own (the server side of a
        // connection is closed after each answer), streams may stay quiet
        // for a minute, and a request a dead replica cannot take goes to
        // another (its health checked on /ready).
        let config = format!(
            "global\n  maxconn 512\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 120s\n  timeout server 120s\n  timeout tunnel 120s\n  option http-server-close\n  option redispatch\n  retries 3\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n  option httpchk\n  http-check send meth GET uri /ready ver HTTP/1.1 hdr Host 127.0.0.1\n  http-check expect status 200\n{servers}"
        );
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).expect("write haproxy.cfg");
        let mut cmd = Command::new(haproxy_binary());
        cmd.arg("-db").arg("-f").arg(&file);
        let proc = Proc::spawn("haproxy", cmd, &dir.join("haproxy.log"));
        wait_port(port, Duration::from_secs(20)).await;
        Balancer { proc, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// Polls `url` until it answers `status`, at most `timeout`.
pub async fn wait_for_status(url: &str, status: u16, timeout: Duration) -> serde_json::Value {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(r) = http.get(url).send().await {
            if r.status().as_u16() == status {
                return r.json().await.unwrap_or_default();
            }
        }
        assert!(
            Instant::now() < deadline,
            "{url} did not answer {status} within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

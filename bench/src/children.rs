//! The processes under test: started with piped output, their listening
//! address read from a banner line, and always stopped and reaped when the
//! guard drops (normal end, error or panic).

use std::io::{BufRead as _, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};

/// How many of a child's last output lines are kept for error messages.
const KEPT_LINES: usize = 40;
/// How long a child gets to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// A running child process, stopped and reaped on drop.
#[derive(Debug)]
pub struct ChildGuard {
    name: String,
    child: Child,
    addr: SocketAddr,
    tail: Arc<Mutex<Vec<String>>>,
}

impl ChildGuard {
    /// Starts `cmd` and waits up to `wait` for a line containing
    /// `banner` followed by `http://ADDR/` on stdout or stderr.
    pub fn start(
        name: &str,
        mut cmd: Command,
        banner: &str,
        wait: Duration,
    ) -> anyhow::Result<Self> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: prctl is async-signal-safe and touches no memory of ours.
        // It makes the kernel kill the child if this process dies without
        // running its destructors (SIGKILL, abort), so nothing is leaked.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name}"))?;
        let tail = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel::<SocketAddr>();
        let streams: [Option<Box<dyn Read + Send>>; 2] = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ];
        for stream in streams.into_iter().flatten() {
            // Drained for the child's whole life so a full pipe never blocks it.
            let tx = tx.clone();
            let tail = tail.clone();
            let banner = banner.to_owned();
            std::thread::spawn(move || drain(stream, &banner, &tx, &tail));
        }
        drop(tx);
        let mut guard = ChildGuard {
            name: name.to_owned(),
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            tail,
        };
        let deadline = Instant::now() + wait;
        loop {
            if let Ok(Some(status)) = guard.child.try_wait() {
                bail!("{name} exited at start ({status}):\n{}", guard.tail());
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(addr) => {
                    guard.addr = addr;
                    return Ok(guard);
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(_) => bail!(
                    "{name} did not print its address within {wait:?}:\n{}",
                    guard.tail()
                ),
            }
        }
    }

    /// The address the child listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails if the child has exited.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(anyhow!("{} exited ({status}):\n{}", self.name, self.tail())),
            Err(e) => Err(anyhow!("cannot check {}: {e}", self.name)),
        }
    }

    /// The last lines the child wrote.
    pub fn tail(&self) -> String {
        self.tail
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .join("\n")
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: plain syscall on our own child, which is not reaped
            // yet (try_wait said so), so the pid cannot have been reused.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn drain(
    stream: Box<dyn Read + Send>,
    banner: &str,
    tx: &mpsc::Sender<SocketAddr>,
    tail: &Mutex<Vec<String>>,
) {
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        if let Some(addr) = banner_addr(&line, banner) {
            let _ = tx.send(addr);
        }
        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
        if t.len() == KEPT_LINES {
            t.remove(0);
        }
        t.push(line);
    }
}

/// `ADDR` from a line like `... <banner> http://ADDR/mcp` or
/// `... <banner> http://ADDR (note)`.
fn banner_addr(line: &str, banner: &str) -> Option<SocketAddr> {
    let rest = &line[line.find(banner)? + banner.len()..];
    let rest = &rest[rest.find("http://")? + "http://".len()..];
    rest.split(|c: char| c == '/' || c.is_whitespace())
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_address_from_the_banner() {
        assert_eq!(
            banner_addr(
                "mcpyard listening on http://127.0.0.1:4242/mcp",
                "listening on"
            ),
            Some(SocketAddr::from(([127, 0, 0, 1], 4242)))
        );
        // uvicorn's banner: the address is followed by a space, not a path.
        assert_eq!(
            banner_addr(
                "INFO:     Uvicorn running on http://127.0.0.1:4243 (Press CTRL+C to quit)",
                "Uvicorn running on"
            ),
            Some(SocketAddr::from(([127, 0, 0, 1], 4243)))
        );
        assert_eq!(banner_addr("something else", "listening on"), None);
    }
}

"""What the gateway's second connection per upstream (for 2026-07-28
clients) costs: the memory of the gateway's process tree (the gateway and
its stdio children) before and after the first client of that era, and how
long that client's first request waits, against a handshake client's and
against later requests.

    .tools/venv/bin/python scripts/bench_eras.py [--bin target/release/mcpyard] [--runs 5]

Upstreams: a server of both eras over stdio and over HTTP
(crates/mcpyard/tests/support/py_two_eras_server.py, Python SDK 2.x) and a
server of the handshake era alone over stdio (py1_server.py, SDK 1.x).
Prints one Markdown table."""

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORT = os.path.join(ROOT, "crates/mcpyard/tests/support")
PY2 = os.path.join(ROOT, ".tools/venv/bin/python")
PY1 = os.path.join(ROOT, ".tools/venv1/bin/python")
MODERN = "2026-07-28"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port: int) -> None:
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listens on {port}")


def tree_rss_kib(pid: int) -> tuple[int, int]:
    """RSS of pid and its descendants, from /proc, and how many they are."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except OSError:
                pass
    total, todo, count = 0, [pid], 0
    while todo:
        p = todo.pop()
        count += 1
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total, count


def own_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def post(url: str, method: str, modern: bool, session: str | None = None, rid: int = 1) -> tuple[dict, str | None]:
    params: dict = {}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if modern:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers["mcp-protocol-version"] = MODERN
        headers["mcp-method"] = method
    elif method == "initialize":
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    if session:
        headers["mcp-session-id"] = session
        headers["mcp-protocol-version"] = "2025-11-25"
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, body, headers)
    with urllib.request.urlopen(req, timeout=60) as r:
        text = r.read().decode()
        sid = r.headers.get("mcp-session-id")
    if text.startswith("event:") or text.startswith("id:") or "data:" in text[:50]:
        text = next(l[5:] for l in text.splitlines() if l.startswith("data:"))
    return json.loads(text), sid


def run_once(binary: str) -> dict:
    work = tempfile.mkdtemp(prefix="mcpyard-bench-eras.")
    procs = []
    try:
        http_port = free_port()
        procs.append(subprocess.Popen([PY2, f"{SUPPORT}/py_two_eras_server.py", "http", str(http_port)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        wait_port(http_port)
        config = os.path.join(work, "mcpyard.toml")
        with open(config, "w") as f:
            f.write(f'[servers.web]\nurl = "http://127.0.0.1:{http_port}/mcp"\n\n'
                    f'[servers.both]\ncommand = "{PY2}"\nargs = ["{SUPPORT}/py_two_eras_server.py", "stdio"]\n\n'
                    f'[servers.py1]\ncommand = "{PY1}"\nargs = ["{SUPPORT}/py1_server.py"]\n\n'
                    '[inference]\nenabled = false\n')
        port = free_port()
        gw = subprocess.Popen([binary, "serve", "--config", config, "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(gw)
        wait_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        _, sid = post(url, "initialize", modern=False)
        # The first request waits for the upstreams' start; time a later one.
        post(url, "tools/list", modern=False, session=sid, rid=2)
        t = time.perf_counter()
        post(url, "tools/list", modern=False, session=sid, rid=2)
        handshake_ms = (time.perf_counter() - t) * 1000
        time.sleep(1.0)
        before, procs_before = tree_rss_kib(gw.pid)
        own_before = own_rss_kib(gw.pid)
        t = time.perf_counter()
        first, _ = post(url, "tools/list", modern=True)
        first_ms = (time.perf_counter() - t) * 1000
        assert any(x["name"] == "both__ask_by_input" for x in first["result"]["tools"]), first
        later = []
        for i in range(20):
            t = time.perf_counter()
            post(url, "tools/list", modern=True, rid=3 + i)
            later.append((time.perf_counter() - t) * 1000)
        time.sleep(2.0)
        after, procs_after = tree_rss_kib(gw.pid)
        own_after = own_rss_kib(gw.pid)
        return {"handshake_ms": handshake_ms, "first_ms": first_ms, "later_ms": statistics.median(later),
                "before_mib": before / 1024, "after_mib": after / 1024,
                "procs_before": procs_before, "procs_after": procs_after,
                "own_before_mib": own_before / 1024, "own_after_mib": own_after / 1024}
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        subprocess.run(["rm", "-rf", work])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(ROOT, "target/release/mcpyard"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = [run_once(args.bin) for _ in range(args.runs)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print("| runs | handshake tools/list ms | first 2026-07-28 request ms | later ones ms (median) "
          "| tree RSS before MiB (processes) | after MiB (processes) | gateway alone before / after MiB |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.runs} | {med['handshake_ms']:.1f} | {med['first_ms']:.0f} | {med['later_ms']:.1f} | "
          f"{med['before_mib']:.1f} ({med['procs_before']:.0f}) | {med['after_mib']:.1f} ({med['procs_after']:.0f}) | "
          f"{med['own_before_mib']:.1f} / {med['own_after_mib']:.1f} |")


if __name__ == "__main__":
    sys.exit(main())

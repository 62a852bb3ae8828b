#!/usr/bin/env python3
"""The catalogue benchmark: mcpyard in front of a stdio server with N
generated tools (bench/catalog/many_tools.py, ~340 bytes of JSON each), for
N = 0, 1,000 and 10,000 by default. For each N it reports the gateway's RSS
once the tools are listed (and per tool, against N = 0), the time of one
`tools/list` page and of the full paged listing, and the p50 of
`mcpyard__search_tools`. Each N runs twice: every tool listed, and every
tool hidden (`expose = "none"`: the tools are searched, not listed). Times
are the gateway's answer, from the request sent to its last byte read, on
one kept-alive connection (as the SDKs' clients send); the client's own
JSON parsing is left out of them. The cost of a catalogue
change (views and index) is measured in process by `search` (BENCHMARKS.md
section 4). Stdlib only; loopback only.

The same times are also taken by `catalog-client` (bench/, a Rust client
on hyper, in a session of its own) when it is built next to the binary:
Python's own HTTP handling is a large part of each of its round trips.

    scripts/bench_catalog.py [--bin target/release/mcpyard] [--sizes 0,1000,10000] [--repeats 20]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import http.client
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "bench", "catalog", "many_tools.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """A Streamable HTTP client of the handshake era, JSON answers only."""

    def __init__(self, url):
        self.url, self.session, self.next_id = url, None, 0
        parsed = urllib.parse.urlsplit(url)
        # One connection kept open, as the SDKs' HTTP clients keep theirs:
        # a connection per request would time the TCP handshake too.
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
        self.path = parsed.path

    def post(self, body, headers):
        """(seconds to the answer's last byte, its headers, its body)."""
        started = time.perf_counter()
        try:
            self.connection.request("POST", self.path, json.dumps(body).encode(), headers)
            response = self.connection.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            raise
        elapsed = time.perf_counter() - started
        if response.status >= 400:
            raise RuntimeError(f"HTTP {response.status}: {raw[:200]!r}")
        return elapsed, response.headers, raw

    def call(self, method, params=None):
        return self.timed_call(method, params)[1]

    def timed_call(self, method, params=None):
        """(seconds to the answer's last byte, result)."""
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.session:
            headers["mcp-session-id"] = self.session
            headers["mcp-protocol-version"] = "2025-11-25"
        elapsed, response_headers, raw = self.post(body, headers)
        self.session = self.session or response_headers.get("mcp-session-id")
        text = raw.decode()
        if text.startswith("event:") or text.startswith("data:"):
            text = next(l[5:] for l in text.splitlines() if l.startswith("data:"))
        message = json.loads(text)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return elapsed, message["result"]

    def open(self):
        self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "bench-catalog", "version": "1"}})
        self.next_id += 1
        body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   "mcp-session-id": self.session, "mcp-protocol-version": "2025-11-25"}
        self.post(body, headers)

    def list_all(self):
        """(every tool, pages, seconds spent waiting for the pages)."""
        tools, cursor, pages, waited = [], None, 0, 0.0
        while True:
            elapsed, page = self.timed_call("tools/list", {"cursor": cursor} if cursor else {})
            waited += elapsed
            tools += page["tools"]
            pages += 1
            cursor = page.get("nextCursor")
            if not cursor:
                return tools, pages, waited


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def ms(seconds):
    return round(seconds * 1000, 2)


def start(binary, n, hidden, work, log):
    """The gateway in front of a server of `n` tools (hidden or listed),
    and a client with a session once that server is up; the caller stops
    the process (its own session group)."""
    port = free_port()
    config = os.path.join(work, f"catalog-{n}-{hidden}.toml")
    expose = 'expose = "none"\n' if hidden else ""
    with open(config, "w") as f:
        f.write(f'[inference]\nenabled = false\n\n[servers.many]\ncommand = "{sys.executable}"\n'
                f'args = ["{SERVER}", "{n}"]\nlist_timeout = "60s"\n{expose}')
    proc = subprocess.Popen([binary, "serve", "--config", config, "--listen", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    client = Client(f"http://127.0.0.1:{port}/mcp")
    deadline = time.time() + 120
    while True:
        try:
            client.open()
            status = client.call("tools/call", {"name": "mcpyard__status", "arguments": {}})
            many = [s for s in status["structuredContent"]["sources"] if s["name"] == "many"][0]
            if many.get("healthy"):
                return proc, client
        except (OSError, RuntimeError, KeyError, IndexError):
            pass
        if time.time() > deadline:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=30)
            raise RuntimeError(f"the server of {n} tools did not come up")
        time.sleep(0.2)


def rust_client_times(rust_client, url, n, repeats):
    """The same timings from `catalog-client` (a Rust client on hyper), in
    its own session: the page, listing and search p50 in ms."""
    if not rust_client:
        return {}
    addr = urllib.parse.urlsplit(url).netloc
    out = subprocess.run([rust_client, "--addr", addr, "--tools", str(n), "--repeats", str(repeats)],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    times = json.loads(out)
    return {f"rust_{k}": times[k] for k in ("page_ms_p50", "full_listing_ms_p50", "search_ms_p50")}


def measure(binary, rust_client, n, hidden, repeats, work):
    log = open(os.path.join(work, f"mcpyard-{n}.log"), "w")
    proc, client = start(binary, n, hidden, work, log)
    try:
        time.sleep(1.0)
        rss = rss_kib(proc.pid)
        tools, pages, _ = client.list_all()
        page_times, full_times, search_times = [], [], []
        for _ in range(repeats):
            page_times.append(client.timed_call("tools/list", {})[0])
        for _ in range(max(3, repeats // 4)):
            full_times.append(client.list_all()[2])
        for i in range(repeats):
            search_times.append(client.timed_call(
                "tools/call", {"name": "mcpyard__search_tools",
                               "arguments": {"query": f"record tool {i * 37 % max(n, 1)}"}})[0])
        rust = rust_client_times(rust_client, client.url, n, repeats)
        return {
            **rust,
            "tools": n, "hidden": hidden, "listed": len(tools), "pages": pages,
            "rss_mib": round(rss / 1024, 1),
            "rss_after_listing_mib": round(rss_kib(proc.pid) / 1024, 1),
            "page_ms_p50": ms(statistics.median(page_times)),
            "full_listing_ms_p50": ms(statistics.median(full_times)),
            "search_ms_p50": ms(statistics.median(search_times)),
        }
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "target/release/mcpyard"))
    parser.add_argument("--sizes", default="0,1000,10000")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rust-client", default=None,
                        help="catalog-client to time with too (default: next to --bin, if built)")
    args = parser.parse_args()
    rust_client = args.rust_client or os.path.join(os.path.dirname(args.bin), "catalog-client")
    if not os.path.exists(rust_client):
        print(f"{rust_client} not built: Python client times only", file=sys.stderr)
        rust_client = None
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for hidden in (False, True):
            for n in [int(s) for s in args.sizes.split(",")]:
                rows.append(measure(args.bin, rust_client, n, hidden, args.repeats, work))
    print("Times in ms (p50): Python client / Rust client (- when not run).\n")
    print("| tools | hidden | listed | pages | RSS MiB | KiB per tool | one page | full listing | search |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    both = lambda r, k: f"{r[k]} / {r.get('rust_' + k, '-')}"
    for r in rows:
        base = next((b for b in rows if b["tools"] == 0 and b["hidden"] == r["hidden"]), None)
        per_tool = "" if not base or r["tools"] == 0 else round((r["rss_mib"] - base["rss_mib"]) * 1024 / r["tools"], 2)
        print(f"| {r['tools']} | {'yes' if r['hidden'] else 'no'} | {r['listed']} | {r['pages']} | {r['rss_mib']} | {per_tool} | "
              f"{both(r, 'page_ms_p50')} | {both(r, 'full_listing_ms_p50')} | {both(r, 'search_ms_p50')} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()

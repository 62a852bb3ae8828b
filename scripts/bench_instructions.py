#!/usr/bin/env python3
"""Instructions per call, counted by valgrind's callgrind: the relay
(passthrough-proxy) and mcpyard, in front of the same echo-upstream.

CPU time per call on a shared 2-core host moves by a third from one run to
the next; the number of instructions a proxy executes for a call does not
(callgrind counts them, whatever else the machine is doing). So this is the
figure to compare builds by. It counts user-space instructions only (the
kernel's TCP work is the same for every proxy: two reads and two writes per
call) and says nothing of waiting.

For each target, the proxy runs under callgrind; one client session makes
--warmup calls, the counters are zeroed (callgrind_control -z), it makes
--calls more, one after the other, and the counters are dumped. The result
is the dumped total over --calls, with the share of the ten costliest
functions (inclusive) when --top is given.

Usage:
  cargo build --release -p mcpyard -p mcpyard-bench
  scripts/bench_instructions.py [--bin-dir target/release] [--calls 2000]
      [--targets passthrough,mcpyard,mcpyard-stdio,mcpyard-governed,mcpyard-stdio-governed]
      [--message-bytes N]   (each echo result N bytes longer)

A target `mcpyard-stdio-with-policy` (or -with-keys, -rate, -guardrails,
-sizes, -audit, -metrics) is the defaults plus that one layer of the
governed configuration: its difference from `mcpyard-stdio` is the layer's
own cost.

Needs valgrind (Debian's package). Prints a Markdown table.

With --kernel, each target runs natively and perf stat counts what the
same calls cost its threads as the kernel sees them: system calls,
context switches (a thread woken for a call and put to sleep again) and
CPU time, user and system. callgrind counts none of the
kernel's work, which on this path is a good part of a call's CPU.

With --flamegraph DIR, each target is sampled by perf instead (user-space
stacks unwound from DWARF, during the same --calls) and drawn as
DIR/TARGET.svg, with its folded stacks in DIR/TARGET.folded. Build with
`--profile profiling` (line tables, symbols kept) and pass
`--bin-dir target/profiling`; needs Debian's `linux-perf` and inferno
(`cargo install inferno`).
"""

import argparse
import http.client
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

KEY = "bench-instructions-key"
ERA = "2025-06-18"


def start(cmd, marker, log, env=None, timeout=120):
    """Starts cmd and waits for the line holding `marker` and an URL (on
    stdout or stderr); everything it prints goes on to the file `log`."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, env=env,
                            start_new_session=True)
    lines = queue.Queue()

    def drain():
        # Read to the end, so that a full pipe never stops the process.
        for line in proc.stdout:
            log.write(line)
            log.flush()
            lines.put(line)

    threading.Thread(target=drain, daemon=True).start()
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        m = re.search(r"http://([0-9.]+):(\d+)/mcp", line)
        if marker in line and m:
            return proc, m.group(1), int(m.group(2))
    stop(proc)
    sys.exit(f"{cmd[0]} did not start in {timeout} s (see {log.name})")


def stop(proc):
    if proc.poll() is None:
        # The whole group: a stdio upstream is the gateway's child.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class Session:
    """One MCP session over one keep-alive HTTP/1.1 connection."""

    def __init__(self, host, port, key=None, padding=0):
        self.conn = http.client.HTTPConnection(host, port, timeout=120)
        # Prose, not one letter repeated: "xxx" would look like a Slack
        # token's start to the redaction's literal search at every byte.
        prose = "The quick brown fox jumps over the lazy dog, then naps. "
        self.padding = (prose * (padding // len(prose) + 1))[:padding]
        self.headers = {"Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self.id = 0
        answer, session = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": ERA, "capabilities": {},
            "clientInfo": {"name": "bench-instructions", "version": "1"}}})
        if session:
            self.headers["Mcp-Session-Id"] = session
        self.headers["MCP-Protocol-Version"] = ERA
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message):
        self.conn.request("POST", "/mcp", json.dumps(message), self.headers)
        resp = self.conn.getresponse()
        body = resp.read()
        if resp.status not in (200, 202):
            sys.exit(f"HTTP {resp.status}: {body[:200]!r}")
        return body, resp.getheader("Mcp-Session-Id")

    def call_echo(self):
        self.id += 1
        message = f"m{self.id}{self.padding}"
        body, _ = self.post({"jsonrpc": "2.0", "id": self.id, "method": "tools/call",
                             "params": {"name": "echo", "arguments": {"message": message}}})
        text = body.decode()
        if text.startswith("event:") or "data:" in text[:20]:
            text = text.split("data:", 1)[1].strip().split("\n")[0]
        answer = json.loads(text)
        got = answer.get("result", {}).get("content", [{}])[0].get("text")
        if got != message:
            sys.exit(f"not the echo: {text[:200]}")


def totals(dump):
    """The dumped file's total instructions."""
    with open(dump) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    sys.exit(f"no totals in {dump}")


# The governed configuration's tables, by the layer they configure.
LAYERS = {"keys": "auth", "policy": "policy", "rate": "limits", "guardrails": "guardrails",
          "sizes": "sizes", "audit": "audit", "metrics": "metrics"}


def governance_tables(args, audit, layers):
    """The governed tables of mcpyard-bench (one configuration, measured two
    ways), only those of `layers` (names of LAYERS) when given."""
    text = subprocess.run(
        [os.path.join(args.bin_dir, "mcpyard-bench"), "--print-governance-config", audit],
        check=True, capture_output=True, text=True).stdout
    if layers is None:
        return text
    roots = {LAYERS[layer] for layer in layers}
    kept, keep = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("["):
            keep = line.strip("[]\n").split(".")[0] in roots
        if keep:
            kept.append(line)
    return "".join(kept)


def measure(name, args, upstream_url, work):
    """Instructions per call of target `name`: `passthrough`, or
    `mcpyard[-stdio][-governed]`, or `mcpyard[-stdio]-with-LAYER` (the
    defaults plus one layer of the governed configuration: its own cost)."""
    base, _, layer = name.partition("-with-")
    kind = base.split("-")
    stdio = "stdio" in kind
    layers = [layer] if layer else (None if "governed" in kind else [])
    if layer and layer not in LAYERS:
        sys.exit(f"{name}: no layer {layer} (one of {', '.join(LAYERS)})")
    governed = layers is None or "keys" in layers
    out = os.path.join(work, f"{name}.callgrind")
    if args.flamegraph or args.kernel:
        grind = []
    else:
        # valgrind's own messages in a file of their own: on the merged
        # output they could split the line the address is read from.
        grind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                 f"--log-file={os.path.join(work, name)}.valgrind.log"]
    env = dict(os.environ)
    env.pop("MCPYARD_API_KEY", None)
    if name == "passthrough":
        addr = upstream_url.split("//")[1].split("/")[0]
        cmd = grind + [os.path.join(args.bin_dir, "passthrough-proxy"), "--upstream", addr]
        marker = "listening on"
    else:
        if stdio:
            server = f'command = "{os.path.join(os.path.abspath(args.bin_dir), "echo-upstream")}"\nargs = ["--stdio"]'
        else:
            server = f'url = "{upstream_url}"'
        config = f'[servers.echo]\n{server}\nprefix = ""\n'
        if layers != []:
            config += governance_tables(args, os.path.join(work, f"{name}.audit.jsonl"), layers)
        if governed:
            env["MCPYARD_BENCH_KEY"] = KEY
        path = os.path.join(work, f"{name}.toml")
        with open(path, "w") as f:
            f.write(config)
        cmd = grind + [os.path.join(args.bin_dir, "mcpyard"), "serve", "--config", path,
                       "--listen", "127.0.0.1:0"]
        marker = "listening on"
    log = open(os.path.join(work, f"{name}.log"), "w")
    proc, host, port = start(cmd, marker, log, env=env, timeout=300)
    try:
        session = None
        for _ in range(600):  # the gateway lists the upstream before it routes
            try:
                session = Session(host, port, KEY if governed else None, args.message_bytes)
                session.call_echo()
                break
            except SystemExit:
                time.sleep(0.2)
        if session is None:
            sys.exit(f"{name}: no session")
        for _ in range(args.warmup):
            session.call_echo()
        if args.flamegraph:
            return sample(name, args, proc, session, work), []
        if args.kernel:
            return kernel_counts(name, args, proc, session, work), []
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True,
                       stdout=subprocess.DEVNULL)
        for _ in range(args.calls):
            session.call_echo()
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True,
                       stdout=subprocess.DEVNULL)
        dumps = sorted(f for f in os.listdir(work)
                       if re.fullmatch(re.escape(f"{name}.callgrind.") + r"\d+", f))
        if not dumps:
            sys.exit(f"{name}: callgrind wrote no dump")
        total = totals(os.path.join(work, dumps[-1]))
        top = []
        if args.top:
            report = subprocess.run(["callgrind_annotate", "--inclusive=yes",
                                     os.path.join(work, dumps[-1])],
                                    capture_output=True, text=True).stdout
            top = [l for l in report.splitlines() if re.match(r"^\s*[\d,]+ \(", l)][:args.top]
        return total / args.calls, top
    finally:
        stop(proc)


def under_perf(perf_args, proc, session, calls):
    """Makes `calls` calls while `perf PERF_ARGS` watches the proxy's threads
    (not a stdio upstream it spawned: the warm-up has started every thread
    it uses, and perf -p follows none started later)."""
    perf = subprocess.Popen(["perf"] + perf_args + ["-p", str(proc.pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # perf attaches to every thread before the first call
    for _ in range(calls):
        session.call_echo()
    perf.send_signal(signal.SIGINT)
    perf.wait(120)


def sample(name, args, proc, session, work):
    """Samples the proxy's user-space stacks while it serves --calls calls
    and draws them; returns the sampled CPU µs per call (each sample weighs
    its period in nanoseconds)."""
    # Not beside the config: the gateway watches that folder for changes.
    os.makedirs(os.path.join(work, "perf"), exist_ok=True)
    data = os.path.join(work, "perf", f"{name}.data")
    under_perf(["record", "-e", "cpu-clock:u", "-F", str(args.frequency),
                "--call-graph", "dwarf,65528", "-o", data], proc, session, args.calls)
    script = subprocess.run(["perf", "script", "-i", data], capture_output=True, check=True)
    folded = subprocess.run([shutil.which("inferno-collapse-perf")], input=script.stdout,
                            capture_output=True, check=True).stdout
    os.makedirs(args.flamegraph, exist_ok=True)
    stem = os.path.join(args.flamegraph, name)
    with open(f"{stem}.folded", "wb") as f:
        f.write(folded)
    title = f"{name}: {args.calls} calls in one session (perf, user-space CPU)"
    # Frames narrower than a pixel are left out: the file stays small
    # enough to keep next to BENCHMARKS.md.
    svg = subprocess.run([shutil.which("inferno-flamegraph"), "--title", title,
                          "--width", "1600", "--minwidth", "1"],
                         input=folded, capture_output=True, check=True).stdout
    with open(f"{stem}.svg", "wb") as f:
        f.write(svg)
    nanoseconds = sum(int(line.rsplit(b" ", 1)[1]) for line in folded.splitlines() if line.strip())
    return nanoseconds / 1000 / args.calls


# What --kernel counts, per call: (perf's event, the column's name).
KERNEL_EVENTS = [("raw_syscalls:sys_enter", "syscalls"), ("context-switches", "context switches"),
                 ("task-clock", "CPU µs")]


def kernel_counts(name, args, proc, session, work):
    """What --calls calls cost the proxy's threads in the kernel's view
    (perf stat): system calls, context switches and CPU time (user and
    system) per call."""
    out = os.path.join(work, f"{name}.perf-stat")
    events = ",".join(e for e, _ in KERNEL_EVENTS)
    under_perf(["stat", "-x", ",", "-e", events, "-o", out], proc, session, args.calls)
    counts = {}
    with open(out) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[0] and fields[0][0].isdigit():
                counts[fields[2]] = float(fields[0])
    row = []
    for event, _ in KERNEL_EVENTS:
        value = counts.get(event)
        if value is None:
            sys.exit(f"{name}: perf stat counted no {event} (see {out})")
        # The clock is counted in milliseconds.
        row.append(value * 1000 / args.calls if event == "task-clock" else value / args.calls)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin-dir", default="target/release")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--targets", default="passthrough,mcpyard,mcpyard-stdio,mcpyard-governed,mcpyard-stdio-governed")
    p.add_argument("--message-bytes", type=int, default=0,
                   help="bytes added to each echoed message (so to each result)")
    p.add_argument("--keep", action="store_true", help="keep the work folder (configs, logs, dumps)")
    p.add_argument("--top", type=int, default=0, help="print the N costliest functions of each target")
    p.add_argument("--flamegraph", metavar="DIR",
                   help="sample with perf and draw DIR/TARGET.svg instead of counting")
    p.add_argument("--frequency", type=int, default=4999, help="perf samples per CPU second")
    p.add_argument("--kernel", action="store_true",
                   help="count system calls, context switches and CPU time per call "
                        "with perf stat instead of instructions")
    args = p.parse_args()
    if args.flamegraph:
        needed = ("perf", "inferno-collapse-perf", "inferno-flamegraph")
    elif args.kernel:
        needed = ("perf",)
    else:
        needed = ("valgrind", "callgrind_control")
    for tool in needed:
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing (apt-get install valgrind linux-perf; "
                     "cargo install inferno)")
    work = tempfile.mkdtemp(prefix="mcpyard-instructions.")
    upstream, host, port = start([os.path.join(args.bin_dir, "echo-upstream"),
                                  "--listen", "127.0.0.1:0"], "listening on",
                                 open(os.path.join(work, "upstream.log"), "w"))
    rows = []
    try:
        for name in [t for t in args.targets.split(",") if t]:
            per_call, top = measure(name, args, f"http://{host}:{port}/mcp", work)
            rows.append((name, per_call))
            if args.kernel:
                counted = ", ".join(f"{v:.2f} {c}" for v, (_, c) in zip(per_call, KERNEL_EVENTS))
                print(f"{name}: {counted} per call", file=sys.stderr)
                continue
            unit = "sampled CPU µs per call" if args.flamegraph else "instructions per call"
            print(f"{name}: {per_call:,.1f} {unit}", file=sys.stderr)
            for line in top:
                print(f"    {line.strip()}", file=sys.stderr)
    finally:
        stop(upstream)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.kernel:
        print_kernel_table(args, rows)
        return
    relay = dict(rows).get("passthrough")
    unit = "sampled user CPU µs per call" if args.flamegraph else "instructions per call"
    print(f"| {args.calls} calls after {args.warmup} | {unit} | × relay |")
    print("|---|---:|---:|")
    for name, per_call in rows:
        ratio = f"{per_call / relay:.2f}×" if relay else "–"
        print(f"| {name} | {per_call:,.{1 if args.flamegraph else 0}f} | {ratio} |")


def print_kernel_table(args, rows):
    """--kernel's table: each count per call, and CPU against the relay's."""
    relay = dict(rows).get("passthrough")
    columns = [c for _, c in KERNEL_EVENTS]
    print(f"| {args.calls} calls after {args.warmup}, per call | " + " | ".join(columns)
          + " | CPU × relay |")
    print("|---|" + "---:|" * (len(columns) + 1))
    for name, counts in rows:
        ratio = f"{counts[2] / relay[2]:.2f}×" if relay else "–"
        print(f"| {name} | " + " | ".join(f"{v:.2f}" for v in counts) + f" | {ratio} |")


if __name__ == "__main__":
    main()

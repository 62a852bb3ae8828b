#!/usr/bin/env python3
"""Idle memory of the gateway with the embedded default: each binary is
dropped from the page cache (posix_fadvise DONTNEED, so that what is
resident is what the process touched, not what the cache held), started
with an empty config file, and its VmRSS, RssAnon and RssFile read from
/proc after --wait seconds. Binaries are alternated, --runs times each.
Stdlib only; the gateway listens on loopback.

    scripts/bench_idle.py [--runs 3] [--wait 4] BIN [BIN...]
"""
import argparse
import os
import re
import subprocess
import tempfile
import time


def cold_start_rss(binary, config, wait):
    fd = os.open(binary, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    proc = subprocess.Popen([binary, "serve", "--config", config, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(wait)
        if proc.poll() is not None:
            raise RuntimeError(f"{binary} exited with {proc.returncode}")
        status = open(f"/proc/{proc.pid}/status").read()
        return {key: int(re.search(key + r":\s+(\d+) kB", status).group(1))
                for key in ("VmRSS", "RssAnon", "RssFile")}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--wait", type=float, default=4.0)
    args = parser.parse_args()
    args.binaries = [os.path.abspath(b) for b in args.binaries]
    results = {b: [] for b in args.binaries}
    with tempfile.TemporaryDirectory() as work:
        config = os.path.join(work, "empty.toml")
        open(config, "w").close()
        for _ in range(args.runs):
            for binary in args.binaries:
                results[binary].append(cold_start_rss(binary, config, args.wait))
    print("| binary | idle RSS (MiB) | anonymous | file-backed |")
    print("|---|---:|---:|---:|")
    def mib(kib):
        return f"{kib / 1024:.1f}"

    def spread(runs, key):
        low, high = mib(min(r[key] for r in runs)), mib(max(r[key] for r in runs))
        return low if low == high else f"{low}–{high}"

    for binary, runs in results.items():
        print(f"| {os.path.basename(binary)} | {' / '.join(mib(r['VmRSS']) for r in runs)} | "
              f"{spread(runs, 'RssAnon')} | {spread(runs, 'RssFile')} |")


if __name__ == "__main__":
    main()

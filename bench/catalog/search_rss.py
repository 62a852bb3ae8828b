#!/usr/bin/env python3
"""Where a hidden catalogue's memory goes while it is used: mcpyard in front
of bench/catalog/many_tools.py with N hidden tools; the gateway's resident
and anonymous memory (smaps_rollup) when the source is ready, after one
full listing, and after 1, 2, 5, 20 and 100 searches.

    bench/catalog/search_rss.py [--bin target/release/mcpyard] [--tools 10000]
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import bench_catalog as catalog  # noqa: E402


def memory(pid):
    """(RSS, anonymous) in MiB."""
    seen = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, *value = line.split()
            if key in ("Rss:", "Anonymous:"):
                seen[key] = int(value[0])
    return round(seen["Rss:"] / 1024, 1), round(seen["Anonymous:"] / 1024, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(catalog.ROOT, "target/release/mcpyard"))
    parser.add_argument("--tools", type=int, default=10000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "mcpyard.log"), "w") as log:
            proc, client = catalog.start(args.bin, args.tools, True, work, log)
            try:
                time.sleep(1.0)
                print("ready", *memory(proc.pid))
                client.list_all()
                print("listed", *memory(proc.pid))
                for i in range(1, 101):
                    query = f"record tool {i * 37 % max(args.tools, 1)}"
                    client.call("tools/call", {"name": "mcpyard__search_tools", "arguments": {"query": query}})
                    if i in (1, 2, 5, 20, 100):
                        print(f"searches {i}", *memory(proc.pid))
            finally:
                os.killpg(proc.pid, 15)
                proc.wait(timeout=30)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where a hidden catalogue's memory goes while it is used: mcpyard in front
of bench/catalog/many_tools.py with N hidden tools; the gateway's resident
and anonymous memory (smaps_rollup) when the source is ready, after one
full listing, and after 1, 2, 5, 20 and 100 searches.

    bench/catalog/search_rss.py [--bin target/release/mcpyard] [--tools 10000]
"""
import argparse
import os
import subprocess
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
        config = os.path.join(work, "catalog.toml")
        with open(config, "w") as f:
            f.write(f'[inference]\nenabled = false\n\n[servers.many]\ncommand = "{sys.executable}"\n'
                    f'args = ["{catalog.SERVER}", "{args.tools}"]\nlist_timeout = "60s"\nexpose = "none"\n')
        port = catalog.free_port()
        with open(os.path.join(work, "mcpyard.log"), "w") as log:
            proc = subprocess.Popen([args.bin, "serve", "--config", config, "--listen", f"127.0.0.1:{port}"],
                                    stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
            try:
                client = catalog.Client(f"http://127.0.0.1:{port}/mcp")
                deadline = time.time() + 120
                while True:
                    try:
                        client.open()
                        status = client.call("tools/call", {"name": "mcpyard__status", "arguments": {}})
                        many = [s for s in status["structuredContent"]["sources"] if s["name"] == "many"][0]
                        if many.get("healthy"):
                            break
                    except (OSError, RuntimeError, KeyError, IndexError):
                        pass
                    if time.time() > deadline:
                        raise RuntimeError("the server of many tools did not come up")
                    time.sleep(0.2)
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

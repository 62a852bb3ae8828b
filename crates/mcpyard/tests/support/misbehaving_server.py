"""A deliberately misbehaving stdio MCP server for fault tests.

Modes (argv[1]):
  hang     answers initialize and tools/list, never answers tools/call, and
           appends every notifications/cancelled it receives to argv[2].
  garbage  writes non-JSON lines around every answer; otherwise well behaved.
  changing a call to `grow` adds a tool `extra` and announces it with
           notifications/tools/list_changed.
  slowstart  sleeps 3 s before reading anything (a cold interpreter or a
           package being fetched); otherwise well behaved.
"""
import json
import sys
import time

MODE = sys.argv[1]
LOG = sys.argv[2] if len(sys.argv) > 2 else None


def send(msg):
    if MODE == "garbage":
        sys.stdout.write("this is not json\n{\"half\": \n\n")
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


TOOLS = [
    {"name": "slow", "description": "never answers", "inputSchema": {"type": "object"}},
    {"name": "grow", "description": "adds a tool", "inputSchema": {"type": "object"}},
    {"name": "echo", "description": "echoes", "inputSchema": {"type": "object"}},
]

if MODE == "slowstart":
    time.sleep(3)

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "misbehaving-" + MODE, "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        if msg["params"]["name"] == "slow" and MODE == "hang":
            continue
        if msg["params"]["name"] == "grow" and MODE == "changing":
            TOOLS.append({"name": "extra", "description": "added later", "inputSchema": {"type": "object"}})
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) + "\n")
        text = json.dumps(msg["params"].get("arguments", {}))
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
    elif method == "notifications/cancelled" and LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(msg["params"]) + "\n")
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})

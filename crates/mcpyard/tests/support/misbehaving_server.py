"""A deliberately misbehaving stdio MCP server for fault tests.

Modes (argv[1]):
  hang     answers initialize and tools/list, never answers tools/call, and
           appends every notifications/cancelled it receives to argv[2].
  garbage  writes non-JSON lines around every answer; otherwise well behaved.
  changing a call to `grow` adds a tool `extra` and announces it with
           notifications/tools/list_changed.
  asking   a call to `ask` asks the client (elicitation/create) for a colour,
           after `delay` seconds when the arguments say so, and answers with
           what the client said; `slow` never answers; `echo` answers
           after `delay` seconds when the arguments say so.
  watching offers resources `mem://a` and `mem://b` with subscriptions; a
           call to `touch` sends notifications/resources/updated for each
           subscribed URI, in order, and answers with the list of them.
  slowstart  sleeps 3 s before reading anything (a cold interpreter or a
           package being fetched); otherwise well behaved.
  mute     answers initialize, never answers tools/list.
  flood    a call to `flood` sends notifications/tools/list_changed 500
           times, then answers; every tools/list it receives is appended
           to argv[2].
  deaf     well behaved until the first ping, which it notes in argv[2];
           from then on it answers nothing (it still reads, and exits when
           its stdin closes).
"""
import itertools
import json
import sys
import threading
import time

MODE = sys.argv[1]
LOG = sys.argv[2] if len(sys.argv) > 2 else None


STDOUT = threading.Lock()


def send(msg):
    with STDOUT:
        if MODE == "garbage":
            sys.stdout.write("this is not json\n{\"half\": \n\n")
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


TOOLS = [
    {"name": "slow", "description": "never answers", "inputSchema": {"type": "object"}},
    {"name": "grow", "description": "adds a tool", "inputSchema": {"type": "object"}},
    {"name": "echo", "description": "echoes", "inputSchema": {"type": "object"}},
    {"name": "ask", "description": "asks the user", "inputSchema": {"type": "object"}},
    {"name": "touch", "description": "updates subscribed resources", "inputSchema": {"type": "object"}},
    {"name": "flood", "description": "announces list changes, many times", "inputSchema": {"type": "object"}},
]
# URIs the client (the gateway) is subscribed to, in `watching` mode.
SUBSCRIBED = set()
# Calls waiting on the client's answer: our request id -> the call's id.
ASKED = {}
ASK_IDS = itertools.count()

if MODE == "slowstart":
    time.sleep(3)

DEAF = False

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if MODE == "deaf" and (DEAF or method == "ping"):
        if not DEAF and LOG:
            with open(LOG, "a") as f:
                f.write("ping\n")
        DEAF = True
        continue
    if method is None and mid in ASKED:
        answer = msg.get("result") or {"error": msg.get("error")}
        send({"jsonrpc": "2.0", "id": ASKED.pop(mid), "result": {
            "content": [{"type": "text", "text": json.dumps(answer)}]}})
    elif method == "initialize":
        capabilities = {"tools": {}}
        if MODE == "watching":
            capabilities["resources"] = {"subscribe": True}
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": capabilities,
            "serverInfo": {"name": "misbehaving-" + MODE, "version": "1"}}})
    elif method == "tools/list" and MODE == "mute":
        continue
    elif method == "tools/list":
        if MODE == "flood" and LOG:
            with open(LOG, "a") as f:
                f.write("tools/list\n")
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "resources/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resources": [
            {"uri": "mem://a", "name": "a"}, {"uri": "mem://b", "name": "b"}]}})
    elif method == "resources/subscribe":
        SUBSCRIBED.add(msg["params"]["uri"])
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
    elif method == "resources/unsubscribe":
        SUBSCRIBED.discard(msg["params"]["uri"])
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
    elif method == "tools/call" and msg["params"]["name"] == "flood" and MODE == "flood":
        for _ in range(500):
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "flooded"}]}})
    elif method == "tools/call" and msg["params"]["name"] == "touch":
        for uri in sorted(SUBSCRIBED):
            send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "content": [{"type": "text", "text": json.dumps(sorted(SUBSCRIBED))}]}})
    elif method == "tools/call" and msg["params"]["name"] == "ask" and MODE == "asking":
        ask_id = "ask-%d" % next(ASK_IDS)
        ASKED[ask_id] = mid
        request = {"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create", "params": {
            "message": "Which colour?",
            "requestedSchema": {"type": "object", "properties": {"colour": {"type": "string"}},
                                "required": ["colour"]}}}
        delay = (msg["params"].get("arguments") or {}).get("delay")
        if delay:
            threading.Timer(delay, send, [request]).start()
        else:
            send(request)
    elif method == "tools/call":
        if msg["params"]["name"] == "slow" and MODE in ("hang", "asking"):
            continue
        if msg["params"]["name"] == "grow" and MODE == "changing":
            TOOLS.append({"name": "extra", "description": "added later", "inputSchema": {"type": "object"}})
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) + "\n")
        arguments = msg["params"].get("arguments", {})
        answer = {"jsonrpc": "2.0", "id": mid, "result": {
            "content": [{"type": "text", "text": json.dumps(arguments)}]}}
        delay = arguments.get("delay") if MODE == "asking" else None
        if delay:
            threading.Timer(delay, send, [answer]).start()
        else:
            send(answer)
    elif method == "notifications/cancelled" and LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(msg["params"]) + "\n")
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})

"""A stdio MCP server with N generated tools (argv[1]), for the catalogue
benchmark: each tool is about 340 bytes of JSON, listed 1,000 to a page.
Speaks JSON-RPC over stdin/stdout and nothing else (stdlib only)."""
import json
import sys

N = int(sys.argv[1])
PAGE = 1000


def tool(i):
    return {
        "name": f"tool_{i:05d}",
        "description": f"Generated tool number {i}: reads a record by id and returns its fields as JSON.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The record's id."},
                "fields": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["id"],
        },
    }


def answer(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, msg_id = msg.get("method"), msg.get("id")
    if msg_id is None:
        continue
    if method == "initialize":
        answer(msg_id, {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "many-tools", "version": "1"},
        })
    elif method == "tools/list":
        start = int((msg.get("params") or {}).get("cursor") or 0)
        page = {"tools": [tool(i) for i in range(start, min(start + PAGE, N))]}
        if start + PAGE < N:
            page["nextCursor"] = str(start + PAGE)
        answer(msg_id, page)
    elif method == "tools/call":
        answer(msg_id, {"content": [{"type": "text", "text": json.dumps(msg["params"])}]})
    elif method == "ping":
        answer(msg_id, {})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id,
                                     "error": {"code": -32601, "message": f"Method not found: {method}"}}) + "\n")
        sys.stdout.flush()

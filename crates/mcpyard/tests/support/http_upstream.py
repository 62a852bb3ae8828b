"""A small Streamable HTTP MCP server for tests that restart an upstream in
place: one request at a time (HTTP/1.0, no GET stream), sessions by
`Mcp-Session-Id` (an unknown one gets 404, as the specification says).

Usage: http_upstream.py PORT GENERATION

Tools: `echo` answers with its arguments; `touch` sends
notifications/resources/updated for each subscribed URI and answers with
the list of them; `announce` sends notifications/tools/list_changed, answers,
and then the process exits at once (a server going away just as it said its
list changed). Generation 2 also offers `second`. Resource `mem://a` can be
subscribed to.
"""
import json
import os
import sys
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer

PORT = int(sys.argv[1])
GENERATION = int(sys.argv[2])
SESSIONS = set()
SUBSCRIBED = set()


def tool(name):
    return {"name": name, "description": name, "inputSchema": {"type": "object"}}


TOOLS = [tool("echo"), tool("touch"), tool("announce")] + (
    [tool("second")] if GENERATION >= 2 else [])


def text_result(text):
    return {"content": [{"type": "text", "text": text}]}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("http_upstream: " + (fmt % args) + "\n")

    def do_GET(self):
        self.send_response(405)
        self.send_header("Allow", "POST, DELETE")
        self.end_headers()

    def do_DELETE(self):
        SESSIONS.discard(self.headers.get("Mcp-Session-Id"))
        self.send_response(200)
        self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        msg = json.loads(body)
        method, mid = msg.get("method"), msg.get("id")
        session = self.headers.get("Mcp-Session-Id")
        if method == "initialize":
            session = uuid.uuid4().hex
            SESSIONS.add(session)
            self.json(mid, {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True},
                                 "resources": {"subscribe": True}},
                "serverInfo": {"name": "http-upstream", "version": str(GENERATION)},
            }, session)
            return
        if session not in SESSIONS:
            self.send_response(404)
            self.end_headers()
            return
        if mid is None:
            self.send_response(202)
            self.end_headers()
            return
        params = msg.get("params") or {}
        if method == "tools/list":
            self.json(mid, {"tools": TOOLS})
        elif method == "resources/list":
            self.json(mid, {"resources": [{"uri": "mem://a", "name": "a"}]})
        elif method == "resources/subscribe":
            SUBSCRIBED.add(params["uri"])
            self.json(mid, {})
        elif method == "resources/unsubscribe":
            SUBSCRIBED.discard(params["uri"])
            self.json(mid, {})
        elif method == "tools/call" and params.get("name") == "touch":
            updates = [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                        "params": {"uri": uri}} for uri in sorted(SUBSCRIBED)]
            self.events(updates + [{"jsonrpc": "2.0", "id": mid,
                                    "result": text_result(json.dumps(sorted(SUBSCRIBED)))}])
        elif method == "tools/call" and params.get("name") == "announce":
            self.events([
                {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
                {"jsonrpc": "2.0", "id": mid, "result": text_result("announced")},
            ])
            self.wfile.flush()
            # Gone before the list can be fetched: no later request is read.
            os._exit(0)
        elif method == "tools/call":
            self.json(mid, text_result(json.dumps(params.get("arguments") or {})))
        else:
            self.json(mid, {})

    def json(self, mid, result, session=None):
        data = json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if session:
            self.send_header("Mcp-Session-Id", session)
        self.end_headers()
        self.wfile.write(data)

    def events(self, messages):
        data = "".join("event: message\ndata: %s\n\n" % json.dumps(m) for m in messages).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


HTTPServer(("127.0.0.1", PORT), Handler).serve_forever()

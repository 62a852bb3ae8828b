"""A faithful stand-in for an OpenAI-compatible vision server (no vision
model can run here): /v1/models lists one vision model; /v1/chat/completions
checks that the request carries images as data URLs and answers in the
OpenAI shape, describing what it received. Serves 127.0.0.1:PORT (argv[1]);
with a file as argv[2], PORT 0 picks a free port, written to that file.
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "llava-vision-test"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "fixture"}]})
        else:
            self.reply(404, {"error": {"message": "not found"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path != "/v1/chat/completions":
            self.reply(404, {"error": {"message": "not found"}})
            return
        images = [
            part["image_url"]["url"]
            for m in body.get("messages", [])
            if isinstance(m.get("content"), list)
            for part in m["content"]
            if part.get("type") == "image_url"
        ]
        if not images or not all(u.startswith("data:image/") for u in images):
            self.reply(400, {"error": {"message": "expected images as data URLs"}})
            return
        text = f"fixture saw {len(images)} image(s)"
        self.reply(200, {
            "id": "chatcmpl-fixture", "object": "chat.completion", "model": body.get("model", MODEL),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
if len(sys.argv) > 2:
    # Port 0 picks a free port; the one bound is written here (whole, by
    # a rename), so no other process can take it in between.
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()

"""A small real HTTP service with an OpenAPI 3.1 document, for the OpenAPI
tests: binary answers of a chosen size, a multipart upload, a recursive JSON
body and a server-sent event stream. It counts the requests it serves
(`GET /count`), so a test can tell that a rejected call sent nothing, and
keeps the `Authorization` header of the last one (`GET /last-authorization`).

Usage: openapi_peer.py PORT
"""

import email.parser
import email.policy
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PNG_HEADER = b"\x89PNG\r\n\x1a\n"

DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "Test peer", "version": "1.0.0"},
    "paths": {
        "/image": {
            "get": {
                "operationId": "get_image",
                "summary": "A PNG image of the given size in bytes",
                "parameters": [{
                    "name": "size", "in": "query", "required": True,
                    "description": "How many bytes the image has",
                    "schema": {"type": "integer", "minimum": 8, "maximum": 20000000},
                }],
                "responses": {"200": {"description": "The image",
                    "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}},
            }
        },
        "/upload": {
            "post": {
                "operationId": "upload_file",
                "summary": "Stores a file and says what it received",
                "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
                    "type": "object", "required": ["file", "label"],
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": "The file to store"},
                        "label": {"type": "string", "description": "A label for the file"},
                    }}}}},
                "responses": {"200": {"description": "What was received",
                    "content": {"application/json": {"schema": {"type": "object"}}}}},
            }
        },
        "/tree": {
            "post": {
                "operationId": "count_nodes",
                "summary": "Counts the nodes of a tree",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Node"}}}},
                "responses": {"200": {"description": "The count", "content": {"application/json": {
                    "schema": {"type": "object", "properties": {"nodes": {"type": "integer"}}}}}}},
            }
        },
        "/events": {
            "get": {
                "operationId": "stream_events",
                "summary": "Three server-sent events, a tenth of a second apart",
                "responses": {"200": {"description": "The events",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}}}},
            }
        },
    },
    "components": {"schemas": {"Node": {
        "type": "object", "required": ["value"],
        "properties": {
            "value": {"type": "integer", "description": "The node's value"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"},
                         "description": "The node's children"},
        }}}},
}

lock = threading.Lock()
served = 0
last_authorization = None


def count_nodes(node):
    return 1 + sum(count_nodes(c) for c in node.get("children", []))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("peer: " + (fmt % args) + "\n")

    def reply(self, status, body, ctype="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def counted(self):
        global served, last_authorization
        with lock:
            served += 1
            last_authorization = self.headers.get("Authorization")

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/openapi.json":
            return self.reply(200, DOCUMENT)
        if url.path == "/count":
            with lock:
                return self.reply(200, {"requests": served})
        if url.path == "/last-authorization":
            with lock:
                return self.reply(200, {"authorization": last_authorization})
        self.counted()
        if url.path == "/image":
            size = int(parse_qs(url.query).get("size", ["64"])[0])
            body = PNG_HEADER + bytes(i % 251 for i in range(max(size - len(PNG_HEADER), 0)))
            return self.reply(200, body, "image/png")
        if url.path == "/events":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for i in range(3):
                self.wfile.write(f'data: {{"n": {i}}}\n\n'.encode())
                self.wfile.flush()
                time.sleep(0.1)
            self.close_connection = True
            return
        self.reply(404, {"error": "not found"})

    def do_POST(self):
        self.counted()
        url = urlparse(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ctype = self.headers.get("Content-Type", "")
        if url.path == "/tree":
            if not ctype.startswith("application/json"):
                return self.reply(415, {"error": "expected JSON"})
            return self.reply(200, {"nodes": count_nodes(json.loads(body))})
        if url.path == "/upload":
            if not ctype.startswith("multipart/form-data"):
                return self.reply(415, {"error": "expected multipart/form-data"})
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
            received = {}
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True) or b""
                if part.get_filename() is not None:
                    received[name] = {"filename": part.get_filename(), "bytes": len(payload),
                                      "text": payload.decode("utf-8", "replace"),
                                      "content_type": part.get("Content-Type")}
                else:
                    received[name] = payload.decode()
            return self.reply(200, {"received": received})
        self.reply(404, {"error": "not found"})


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.serve_forever()

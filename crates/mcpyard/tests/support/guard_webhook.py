"""A guardrail check over HTTP, as the README documents it, for the
guardrail tests: POST /check gets {version, identity, session, source,
tool, method, arguments} and answers {action, arguments?, reason?}.

The decision depends on the `message` argument: "refuse-me" is refused,
"modify-me" is replaced, "slow-me" is answered after 3 s, "break-me" gets
HTTP 500; anything else passes. Every request is appended as a JSON line
to LOG, so a test can read what the gateway sent.

Usage: guard_webhook.py PORT LOG
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[2]


class Check(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        with open(LOG, "a") as log:
            log.write(json.dumps(request) + "\n")
        message = str((request.get("arguments") or {}).get("message", ""))
        if "break-me" in message:
            self.send_error(500)
            return
        if "slow-me" in message:
            time.sleep(3)
            answer = {"action": "pass"}
        elif "refuse-me" in message:
            answer = {"action": "refuse", "reason": "the check says no"}
        elif "modify-me" in message:
            answer = {"action": "modify", "arguments": {"message": "changed by the check"}}
        else:
            answer = {"action": "pass"}
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Check).serve_forever()

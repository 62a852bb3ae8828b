#!/usr/bin/env bash
# The client scripts/conformance-client.sh --through-gateway runs for each
# client scenario: the scenario's calls made THROUGH mcpyard.
#
# The suite starts the scenario's servers and runs this with the MCP server
# URL as the last argument, MCP_CONFORMANCE_SCENARIO and, where the
# scenario needs credentials, MCP_CONFORMANCE_CONTEXT (JSON). This script
#   1. writes an mcpyard.toml with that URL as the one HTTP upstream (no
#      prefix) and, for auth/* scenarios, its `oauth` table from the context:
#      client_credentials (client secret, or private_key_jwt with the key in a
#      file), identity_assertion (the cross-app-access extension), or
#      authorization_code;
#   2. for authorization_code, runs `mcpyard login` with a stand-in browser
#      ($BROWSER = tests/support/oauth_browser.py) that follows the
#      authorization server's redirects to login's loopback port;
#   3. starts `mcpyard serve` on a free loopback port, tokens in a temporary
#      XDG state folder;
#   4. runs the library's conformance example client against the gateway
#      (no OAuth on that hop, no credentials: of the context only the
#      scenario's toolCalls): it lists the tools and calls each, answering
#      elicitations with their defaults, as it does directly;
#   5. stops the gateway and removes the folder. Exits with the client's code
#      (or login's, when the login fails).
#
# Environment: MCPYARD_BIN (default target/debug/mcpyard) and
# CONFORMANCE_CLIENT_BIN (default target/debug/examples/conformance_client),
# both set by scripts/conformance-client.sh (built into $CARGO_TARGET_DIR).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MCPYARD="${MCPYARD_BIN:-$ROOT/target/debug/mcpyard}"
CLIENT="${CONFORMANCE_CLIENT_BIN:-$ROOT/target/debug/examples/conformance_client}"
BROWSER_SCRIPT="$ROOT/crates/mcpyard/tests/support/oauth_browser.py"
# The client ID metadata document URL the suite's CIMD scenario serves.
CLIENT_METADATA_URL="https://conformance-test.local/client-metadata.json"

URL="${!#}"
case "$URL" in http://*|https://*) ;; *) echo "usage: $0 URL" >&2; exit 2 ;; esac
for bin in "$MCPYARD" "$CLIENT"; do
  [ -x "$bin" ] || { echo "conformance-gateway-client: $bin is missing (cargo build)" >&2; exit 2; }
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpyard-gateway-client.XXXXXX")"
GATEWAY_PID=""
cleanup() {
  if [ -n "$GATEWAY_PID" ]; then
    kill -TERM "$GATEWAY_PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$GATEWAY_PID" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$GATEWAY_PID" 2>/dev/null || true
    wait "$GATEWAY_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Secrets reach the gateway through its environment, never the file.
export XDG_STATE_HOME="$WORK/state"
unset MCPYARD_API_KEY MCPYARD_CONFIG
GRANT="$(python3 - "$URL" "${MCP_CONFORMANCE_SCENARIO:-}" "${MCP_CONFORMANCE_CONTEXT:-}" \
  "$WORK" "$CLIENT_METADATA_URL" <<'PY'
import json, os, sys
url, scenario, context, work, cimd = sys.argv[1:6]
ctx = json.loads(context) if context else {}

def q(s):
    return json.dumps(s)

lines = ["[servers.s]", f"url = {q(url)}", 'prefix = ""', "timeout = \"30s\"",
         "list_timeout = \"30s\""]
grant = "none"
env = {}
if scenario.startswith("auth/"):
    lines.append("[servers.s.oauth]")
    lines.append(f"client_metadata_url = {q(cimd)}")
    if ctx.get("client_id"):
        lines.append(f"client_id = {q(ctx['client_id'])}")
    if ctx.get("client_secret"):
        env["CONFORMANCE_CLIENT_SECRET"] = ctx["client_secret"]
        lines.append('client_secret = "${CONFORMANCE_CLIENT_SECRET}"')
    if ctx.get("private_key_pem"):
        key = os.path.join(work, "client-key.pem")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(ctx["private_key_pem"])
        grant = "client_credentials"
        lines += [f"private_key_file = {q(key)}", "auth_method = \"private_key_jwt\"",
                  f"private_key_algorithm = {q(ctx.get('signing_algorithm', 'ES256'))}"]
    elif ctx.get("idp_id_token"):
        grant = "identity_assertion"
        env["CONFORMANCE_ID_TOKEN"] = ctx["idp_id_token"]
        lines += [f"idp_token_endpoint = {q(ctx['idp_token_endpoint'])}",
                  f"idp_client_id = {q(ctx['idp_client_id'])}",
                  'id_token = "${CONFORMANCE_ID_TOKEN}"']
    elif "client-credentials" in scenario:
        grant = "client_credentials"
    else:
        grant = "authorization_code"
        lines.append("redirect_port = 0")
    lines.append(f"grant = {q(grant)}")
with open(os.path.join(work, "mcpyard.toml"), "w") as f:
    f.write("\n".join(lines) + "\n")
with open(os.path.join(work, "env"), "w") as f:
    for k, v in env.items():
        f.write(f"export {k}={json.dumps(v)}\n")
os.chmod(os.path.join(work, "env"), 0o600)
print(grant)
PY
)"
# shellcheck disable=SC1091
. "$WORK/env"
CONFIG="$WORK/mcpyard.toml"

if [ "$GRANT" = "authorization_code" ]; then
  BROWSER="python3 $BROWSER_SCRIPT" "$MCPYARD" login s --config "$CONFIG" --timeout 60s \
    </dev/null || exit $?
fi

"$MCPYARD" serve --config "$CONFIG" --listen 127.0.0.1:0 >"$WORK/gateway.log" 2>&1 &
GATEWAY_PID=$!
GATEWAY_URL=""
for _ in $(seq 1 600); do
  GATEWAY_URL="$(sed -n 's/^mcpyard listening on \(http:[^ ]*\)$/\1/p' "$WORK/gateway.log" | head -n1)"
  [ -n "$GATEWAY_URL" ] && break
  kill -0 "$GATEWAY_PID" 2>/dev/null || { cat "$WORK/gateway.log" >&2; exit 1; }
  sleep 0.05
done
[ -n "$GATEWAY_URL" ] || { echo "the gateway did not start" >&2; cat "$WORK/gateway.log" >&2; exit 1; }

# The client in front of the gateway gets no credentials: of the context
# only the calls the scenario wants made (toolCalls), if any.
CALLS="$(python3 -c 'import json, os, sys
ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
print(json.dumps({"toolCalls": ctx["toolCalls"]}) if "toolCalls" in ctx else "")')"
rc=0
if [ -n "$CALLS" ]; then
  env -u MCP_CONFORMANCE_SCENARIO MCP_CONFORMANCE_CONTEXT="$CALLS" "$CLIENT" "$GATEWAY_URL" || rc=$?
else
  env -u MCP_CONFORMANCE_SCENARIO -u MCP_CONFORMANCE_CONTEXT "$CLIENT" "$GATEWAY_URL" || rc=$?
fi
if [ "$rc" -ne 0 ]; then
  # What the gateway saw, for the suite's log (it never holds a token or secret).
  sed 's/^/[gateway] /' "$WORK/gateway.log" >&2
fi
exit "$rc"

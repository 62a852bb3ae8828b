#!/usr/bin/env bash
# Builds mcpyard and the benchmarks in release mode, then runs one of them.
#
#   scripts/bench.sh [ARGS]            the gateway's hot path: an MCP upstream
#                                      measured directly, through a byte-for-byte
#                                      proxy and through mcpyard
#   scripts/bench.sh inference [ARGS]  the inference tools: chat latency against a
#                                      real llama-cpp-python server, directly and
#                                      through mcpyard; mcpyard's memory while a
#                                      ~10 MB image goes through local__analyze_image
#                                      (needs .tools/venv-llama: scripts/install-test-deps.sh)
#
# ARGS go to the benchmark binary (see its `--help`), for example
#   scripts/bench.sh --duration 20 --connections 64 --rate 2000
#   scripts/bench.sh --targets direct,passthrough,mcpyard,mcpyard-governed,mcpyard-stdio,mcpyard-stdio-governed --rounds 3
#                                      the full comparison: mcpyard by default and with every
#                                      governance layer on, before an HTTP and a stdio upstream,
#                                      against the relay, measured in turn three times
#   scripts/bench.sh inference --phases image --image-repeats 5
# Results: Markdown tables on stdout, JSON in target/bench/results.json
# (target/bench/inference.json for `inference`) unless --out is given.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo metadata --no-deps --format-version 1 | grep -q '"name":"mcpyard-bench"'; then
    echo "bench/ is not a workspace member: add \"bench\" to [workspace] members in Cargo.toml" >&2
    exit 2
fi

bin=mcpyard-bench
json=target/bench/results.json
if [[ "${1:-}" == "inference" ]]; then
    shift
    bin=mcpyard-bench-inference
    json=target/bench/inference.json
fi

cargo build --release -p mcpyard -p mcpyard-bench

out=(--out "$json")
for arg in "$@"; do
    case "$arg" in
        --out|--out=*) out=() ;;
    esac
done
exec "target/release/$bin" "${out[@]}" --label "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$@"

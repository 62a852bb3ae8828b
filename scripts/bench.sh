#!/usr/bin/env bash
# Builds mcpyard and the benchmark in release mode, then measures an MCP
# upstream directly, through a byte-for-byte proxy and through mcpyard.
# Arguments go to mcpyard-bench (see `--help`): for example
#   scripts/bench.sh --duration 20 --connections 64 --rate 2000
# Results: a Markdown table on stdout, JSON in target/bench/results.json
# unless --out is given.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo metadata --no-deps --format-version 1 | grep -q '"name":"mcpyard-bench"'; then
    echo "bench/ is not a workspace member: add \"bench\" to [workspace] members in Cargo.toml" >&2
    exit 2
fi
cargo build --release -p mcpyard -p mcpyard-bench

out=(--out target/bench/results.json)
for arg in "$@"; do
    case "$arg" in
        --out|--out=*) out=() ;;
    esac
done
exec target/release/mcpyard-bench "${out[@]}" --label "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$@"

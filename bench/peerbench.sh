#!/usr/bin/env bash
# bench/peerbench.sh: measure apserver and Codex with peerbench, in the same
# run, against the same scripted model, and print the ratios apserver targets.
# See docs/benchmarks.md. `make bench` runs it after `make build`.
#
# For every scenario and run it starts peerbench's mockllm on 127.0.0.1 and
# drives, one after the other:
#   apserver:S             bin/apserver (default: deltas coalesced when the
#                          client falls behind)
#   apserver-nocoalesce:S  bin/apserver --no-coalesce (stream scenario only)
#   baseline:S             a plain HTTP client reading the mock's whole SSE
#                          stream (stream scenario only)
#   codex:S                codex app-server, through peerbench's run-codex.sh
# Runs of the different servers are interleaved so that drift of the machine
# hits them alike. Medians come from peerbench's summarize.
#
# Environment knobs (all optional):
#   RUNS              timed runs per scenario and server (default 3)
#   SCENARIOS         "stream tool multi-turn"
#   DELTAS            text deltas in the stream scenario (default 10000)
#   TURNS             turns in the multi-turn scenario (default 5)
#   MODEL             model slug (default gpt-5.5, in Codex's bundled catalog)
#   APSERVER_BIN      apserver executable (default bin/apserver)
#   PEERBENCH_DIR     peerbench sources (default bench/peerbench, the
#                     project's own copy)
#   CODEX_BIN         Codex executable; default: installed from the npm
#                     registry into CODEX_CACHE
#   CODEX_VERSION     npm version to install (default 0.169.0)
#   CODEX_CACHE       npm prefix for Codex (default
#                     ${XDG_CACHE_HOME:-$HOME/.cache}/apserver-bench/codex)
#   BENCH_SKIP_CODEX  1: do not run Codex; its published figures are shown
#   ISOLATE_NET       auto|1|0: run everything in a private network namespace
#                     (unshare -rn, loopback only), as run-codex.sh does
#   OUT               results directory (default: new /var/tmp/apserver-bench.*;
#                     not /tmp, where Codex warns about its helper aliases)
#   TURN_TIMEOUT      per-turn timeout (default 300s)
#   KEEP              1 keeps every run's home, data dir and workspace
#   BENCH_DROP_CACHE  1 (default): drop the page cache of both executables
#                     before the runs, so that each is paged in by running
#                     it, not left as it was written (a binary linked a
#                     moment ago is mapped whole; docs/benchmarks.md); 0: not
#
# Exit status: 0 when every run completed (even if a target is missed: this
# is a report), 1 when a run failed, 2 on a setup error.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${RUNS:-3}"
SCENARIOS="${SCENARIOS:-stream tool multi-turn}"
DELTAS="${DELTAS:-10000}"
TURNS="${TURNS:-5}"
MODEL="${MODEL:-gpt-5.5}"
APSERVER_BIN="${APSERVER_BIN:-$ROOT/bin/apserver}"
PEERBENCH_DIR="${PEERBENCH_DIR:-$ROOT/bench/peerbench}"
CODEX_BIN="${CODEX_BIN:-}"
CODEX_VERSION="${CODEX_VERSION:-0.169.0}"
CODEX_CACHE="${CODEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/apserver-bench/codex}"
BENCH_SKIP_CODEX="${BENCH_SKIP_CODEX:-0}"
ISOLATE_NET="${ISOLATE_NET:-auto}"
TURN_TIMEOUT="${TURN_TIMEOUT:-300s}"
KEEP="${KEEP:-0}"
BENCH_DROP_CACHE="${BENCH_DROP_CACHE:-1}"

log() { printf '[peerbench] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

# ------------------------------------------------------------------ stage 1
# Build the tools, get Codex, then re-enter in a network namespace.
if [[ "${APSERVER_BENCH_STAGE:-}" != inner ]]; then
  [[ "$RUNS" =~ ^[0-9]+$ && "$RUNS" -ge 1 && "$RUNS" -le 100 ]] || die "RUNS must be 1..100"
  [[ "$DELTAS" =~ ^[0-9]+$ && "$DELTAS" -ge 1 ]] || die "DELTAS must be a positive number"
  [[ -x "$APSERVER_BIN" ]] || die "$APSERVER_BIN not found: run 'make build' first"
  APSERVER_BIN="$(cd "$(dirname "$APSERVER_BIN")" && pwd)/$(basename "$APSERVER_BIN")"
  [[ -f "$PEERBENCH_DIR/cmd/drive/main.go" ]] || die "peerbench not found at $PEERBENCH_DIR (set PEERBENCH_DIR)"
  PEERBENCH_DIR="$(cd "$PEERBENCH_DIR" && pwd)"
  command -v go >/dev/null || die "go is required to build peerbench"

  OUT="${OUT:-$(mktemp -d /var/tmp/apserver-bench.XXXXXX)}"
  mkdir -p "$OUT/bin"
  OUT="$(cd "$OUT" && pwd)"
  log "results go to $OUT"
  log "building peerbench (mockllm, drive, summarize) and bench/benchtool.go"
  (cd "$PEERBENCH_DIR" && go build -o "$OUT/bin/" ./cmd/mockllm ./cmd/drive ./cmd/summarize) || die "building peerbench failed"
  (cd "$ROOT" && go build -o "$OUT/bin/benchtool" ./bench/benchtool.go) || die "building bench/benchtool.go failed"

  # Codex: CODEX_BIN, else the npm package in CODEX_CACHE (installed once).
  CODEX_NOTE=""
  if [[ "$BENCH_SKIP_CODEX" == 1 ]]; then
    CODEX_BIN="" CODEX_NOTE="skipped (BENCH_SKIP_CODEX=1)"
  elif [[ -n "$CODEX_BIN" ]]; then
    [[ -x "$CODEX_BIN" ]] || die "CODEX_BIN=$CODEX_BIN is not executable"
  else
    find_codex() {
      local p="$CODEX_CACHE/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
      if [[ -x "$p" ]]; then echo "$p"; return; fi
      # Another platform package (e.g. arm64): the native binary under vendor/.
      find "$CODEX_CACHE/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f -perm -u+x 2>/dev/null | head -n 1
    }
    CODEX_BIN="$(find_codex || true)"
    if [[ -z "$CODEX_BIN" ]] || ! "$CODEX_BIN" --version 2>/dev/null | grep -qF "$CODEX_VERSION"; then
      if command -v npm >/dev/null; then
        log "installing @openai/codex@$CODEX_VERSION from the npm registry into $CODEX_CACHE"
        mkdir -p "$CODEX_CACHE"
        if npm install --prefix "$CODEX_CACHE" --no-audit --no-fund "@openai/codex@$CODEX_VERSION" >"$OUT/npm-install.log" 2>&1; then
          CODEX_BIN="$(find_codex || true)"
        else
          CODEX_BIN="" CODEX_NOTE="npm install failed (see $OUT/npm-install.log)"
        fi
      else
        CODEX_BIN="" CODEX_NOTE="npm not found"
      fi
    fi
    [[ -n "$CODEX_BIN" || -n "$CODEX_NOTE" ]] || CODEX_NOTE="no codex binary in $CODEX_CACHE after npm install"
  fi
  CODEX_VERSION_STR=""
  if [[ -n "$CODEX_BIN" ]]; then
    CODEX_BIN="$(cd "$(dirname "$CODEX_BIN")" && pwd)/$(basename "$CODEX_BIN")"
    CODEX_VERSION_STR="$("$CODEX_BIN" --version 2>/dev/null || true)"
    [[ -n "$CODEX_VERSION_STR" ]] || { CODEX_NOTE="$CODEX_BIN --version failed"; CODEX_BIN=""; }
  fi
  if [[ -n "$CODEX_BIN" ]]; then
    log "codex: $CODEX_VERSION_STR ($CODEX_BIN)"
    [[ "$CODEX_VERSION_STR" == *"$CODEX_VERSION"* ]] || log "warning: expected Codex $CODEX_VERSION"
  else
    log "codex: not measured: $CODEX_NOTE; its published figures will be shown instead"
  fi
  log "apserver: $("$APSERVER_BIN" version 2>/dev/null || echo unknown) ($APSERVER_BIN)"

  # Peak RSS counts the executable's mapped pages, and how many get mapped
  # depends on how its pages came into the page cache: on kernels that map
  # a large page-cache folio whole, a binary the linker has just written
  # (or one read through with cat) is resident nearly whole, one paged in
  # by running it only where it is used. Both servers start from the
  # second state: their cached pages are written back and dropped here,
  # then each is started once untimed (its version), so that neither's
  # first timed start reads its startup code from the disk.
  EXE_CACHE="as found"
  if [[ "$BENCH_DROP_CACHE" == 1 ]]; then
    EXE_CACHE="dropped before the runs"
    for exe in "$APSERVER_BIN" ${CODEX_BIN:+"$CODEX_BIN"}; do
      sync "$exe" 2>/dev/null || true
      dd if="$exe" iflag=nocache count=0 status=none 2>/dev/null ||
        { log "warning: could not drop the page cache of $exe"; EXE_CACHE="as found"; }
    done
    "$APSERVER_BIN" version >/dev/null 2>&1 || true
    [[ -z "$CODEX_BIN" ]] || "$CODEX_BIN" --version >/dev/null 2>&1 || true
  fi
  log "executables' page cache: $EXE_CACHE"

  export RUNS SCENARIOS DELTAS TURNS MODEL APSERVER_BIN PEERBENCH_DIR CODEX_BIN CODEX_NOTE \
    CODEX_VERSION_STR ISOLATE_NET TURN_TIMEOUT KEEP OUT EXE_CACHE
  use_ns=0
  case "$ISOLATE_NET" in
    1) use_ns=1 ;;
    auto) if unshare -rn true 2>/dev/null && command -v ip >/dev/null; then use_ns=1; fi ;;
  esac
  if [[ "$use_ns" == 1 ]]; then
    log "private network namespace (unshare -rn): loopback only"
    APSERVER_BENCH_STAGE=inner APSERVER_BENCH_NETNS=1 exec unshare -rn "$BASH" "${BASH_SOURCE[0]}"
  fi
  [[ "$ISOLATE_NET" == 1 ]] && die "ISOLATE_NET=1 but unshare -rn is not available"
  log "no network namespace: servers only get the mock's loopback URL"
  APSERVER_BENCH_STAGE=inner APSERVER_BENCH_NETNS=0 exec "$BASH" "${BASH_SOURCE[0]}"
fi

# ------------------------------------------------------------------ stage 2
if [[ "${APSERVER_BENCH_NETNS:-0}" == 1 ]]; then
  ip link set lo up || die "cannot bring up loopback in the network namespace"
fi
BIN="$OUT/bin"
METRICS="$OUT/metrics.jsonl"
: >"$METRICS"

MOCK_PID=""
stop_mock() {
  if [[ -n "$MOCK_PID" ]]; then kill "$MOCK_PID" 2>/dev/null || true; wait "$MOCK_PID" 2>/dev/null || true; fi
  MOCK_PID=""
}
trap stop_mock EXIT

start_mock() { # dir scenario
  local dir="$1" sc="$2" i
  rm -f "$dir/mock.addr"
  "$BIN/mockllm" -scenario "$sc" -deltas "$DELTAS" -model "$MODEL" \
    -addr 127.0.0.1:0 -addr-file "$dir/mock.addr" -log-requests "$dir/requests.jsonl" \
    -lifetime 1h -v >"$dir/mock.log" 2>&1 &
  MOCK_PID=$!
  for i in $(seq 1 100); do
    [[ -s "$dir/mock.addr" ]] && break
    kill -0 "$MOCK_PID" 2>/dev/null || die "mockllm exited: $(cat "$dir/mock.log")"
    sleep 0.05
  done
  [[ -s "$dir/mock.addr" ]] || die "mockllm did not start"
  MOCK_URL="$(cat "$dir/mock.addr")"
}

# Same prompts and drive flags as run-codex.sh.
scenario_args() { # scenario -> SC_ARGS
  case "$1" in
    stream) SC_ARGS=(-prompt "Write a long answer.") ;;
    tool) SC_ARGS=(-prompt "Run echo hello and tell me what it printed.") ;;
    multi-turn) SC_ARGS=(-turns "$TURNS" -prompt "Next turn, please.") ;;
    *) SC_ARGS=(-prompt "Hello.") ;;
  esac
}

# append_metrics file label: the metrics line, or a failure line if drive
# printed nothing.
append_metrics() {
  if grep -q '^{' "$1" 2>/dev/null; then
    cat "$1" >>"$METRICS"
  else
    printf '{"label":"%s","ok":false,"error":"no metrics (see %s)"}\n' "$2" "$(dirname "$1")" >>"$METRICS"
  fi
}

brief() { # metrics file -> "ok" or "FAILED"
  if grep -q '"ok":true' "$1" 2>/dev/null; then echo ok; else echo FAILED; fi
}

run_apserver() { # scenario dir label [extra apserver flags]
  local sc="$1" dir="$2" label="$3"
  shift 3
  mkdir -p "$dir/home" "$dir/data" "$dir/ws"
  start_mock "$dir" "$sc"
  scenario_args "$sc"
  env -i PATH="$PATH" HOME="$dir/home" LANG=C.UTF-8 OPENAI_API_KEY=dummy \
    "$BIN/drive" -label "$label" -cwd "$dir/ws" -turn-timeout "$TURN_TIMEOUT" \
      -transcript "$dir/transcript.jsonl" -stderr "$dir/server-stderr.log" \
      "${SC_ARGS[@]}" \
      -- "$APSERVER_BIN" --data-dir "$dir/data" --model "$MODEL" \
        --base-url "$MOCK_URL/v1" --wire responses "$@" >"$dir/metrics.json" || true
  stop_mock
  append_metrics "$dir/metrics.json" "$label"
  if [[ "$KEEP" != 1 ]]; then rm -rf "$dir/home" "$dir/data" "$dir/ws"; fi
  log "  $label: $(brief "$dir/metrics.json")"
}

run_baseline() { # dir label
  local dir="$1" label="$2"
  mkdir -p "$dir"
  start_mock "$dir" stream
  "$BIN/benchtool" sseread -label "$label" -url "$MOCK_URL/v1/responses" -model "$MODEL" \
    -prompt "Write a long answer." -deltas "$DELTAS" >"$dir/metrics.json" || true
  stop_mock
  append_metrics "$dir/metrics.json" "$label"
  log "  $label: $(brief "$dir/metrics.json")"
}

run_codex() { # scenario dir label
  local sc="$1" dir="$2" label="$3"
  mkdir -p "$dir"
  # One run per call, so that Codex's runs interleave with apserver's.
  OUT="$dir" CODEX_BIN="$CODEX_BIN" SCENARIOS="$sc" RUNS=1 DELTAS="$DELTAS" TURNS="$TURNS" \
    MODEL="$MODEL" AUDIT_NET=0 ISOLATE_NET=auto TURN_TIMEOUT="$TURN_TIMEOUT" KEEP="$KEEP" \
    "$PEERBENCH_DIR/run-codex.sh" >"$dir/run-codex.stdout" 2>"$dir/run-codex.log" || true
  if [[ -s "$dir/metrics.jsonl" ]]; then
    "$BIN/benchtool" relabel -prefix codex: <"$dir/metrics.jsonl" >"$dir/metrics.json"
  else
    : >"$dir/metrics.json"
  fi
  append_metrics "$dir/metrics.json" "$label"
  log "  $label: $(brief "$dir/metrics.json")"
}

for sc in $SCENARIOS; do
  for r in $(seq 1 "$RUNS"); do
    log "$sc: run $r/$RUNS"
    run_apserver "$sc" "$OUT/apserver/$sc/run$r" "apserver:$sc"
    if [[ "$sc" == stream ]]; then
      run_apserver "$sc" "$OUT/apserver-nocoalesce/$sc/run$r" "apserver-nocoalesce:$sc" --no-coalesce
      run_baseline "$OUT/baseline/$sc/run$r" "baseline:$sc"
    fi
    if [[ -n "$CODEX_BIN" ]]; then
      run_codex "$sc" "$OUT/codex/$sc/run$r" "codex:$sc"
    fi
  done
done

"$BIN/summarize" "$METRICS" >"$OUT/summary.json" 2>"$OUT/summary.txt"
codex_mode=measured
[[ -n "$CODEX_BIN" ]] || codex_mode=published
cpu="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)"
status=0
"$BIN/benchtool" report -summary "$OUT/summary.json" -out "$OUT/report.json" \
  -codex "$codex_mode" -codex-version "$CODEX_VERSION_STR" -deltas "$DELTAS" \
  -meta "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" -meta "machine=$(nproc) vCPU${cpu:+, $cpu}" \
  -meta "apserver_version=$("$APSERVER_BIN" version 2>/dev/null || echo unknown)" \
  -meta "runs=$RUNS" -meta "scenarios=$SCENARIOS" -meta "turns=$TURNS" \
  -meta "codex_note=$CODEX_NOTE" -meta "exe_page_cache=$EXE_CACHE" || status=$?
[[ -z "$CODEX_NOTE" ]] || echo "Codex not measured: $CODEX_NOTE"
echo "executables' page cache: $EXE_CACHE (BENCH_DROP_CACHE)"
echo
echo "medians: $OUT/summary.json (per label, from peerbench summarize)"
echo "table:   $OUT/report.json;  every run: $OUT/metrics.jsonl"
exit "$status"

#!/usr/bin/env bash
# seawall gateway vs LiteLLM's proxy vs direct, over loopback, against
# `seawall chaos`. Not part of `cargo test`; see benches/peers/README.md.
#
#   benches/peers/gateway_vs_litellm.sh
#
# Needs: cargo, python3 (venv + pip reach PyPI unless LITELLM_VENV is set),
# wrk (closed loop), oha (constant rate, `cargo install oha`).
#
# Environment (all optional):
#   LITELLM_VENV=dir    reuse a venv that has litellm[proxy]==1.80.0
#   SKIP_LITELLM=1      gateway vs direct only
#   SAT_SECS=10         seconds per closed-loop run
#   LL_SAT_SECS=20      seconds per closed-loop run through LiteLLM
#   LAT_SECS=15         seconds per constant-rate run
#   RATE=1000           offered rate (req/s) for direct and the gateway
#   LITELLM_RATE=       offered rate for LiteLLM (default, per answer kind:
#                       a third of its closed-loop throughput at 16 connections)
#   CONNS="16 128 512"  closed-loop connection counts
#   THREADS=N           the gateway's --threads (a single-threaded runtime
#                       per thread) for the `gateway --threads` path
#                       (default: the number of cores; 0: that path is skipped)
#   SEAWALL_BIN=path    use this seawall binary instead of building one
#   KEEP_WORK=1         keep the temp dir (logs, oha JSON, results.tsv)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SAT_SECS=${SAT_SECS:-10}
# LiteLLM's streams take seconds each at 128+ connections: a longer window.
LL_SAT_SECS=${LL_SAT_SECS:-20}
LAT_SECS=${LAT_SECS:-15}
RATE=${RATE:-1000}
CONNS=${CONNS:-"16 128 512"}
LITELLM_VERSION=1.80.0
TOKENS=64
FAULT="ok;tokens=$TOKENS"

WORK=$(mktemp -d /tmp/seawall-peers.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        # Each server runs in its own process group (setsid): end the group.
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    done
    sleep 1
    for pid in "${PIDS[@]}"; do
        kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    done
    if [[ -z "${KEEP_WORK:-}" ]]; then
        rm -rf "$WORK"
    else
        echo "work directory kept: $WORK" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits (at most $2 seconds) until URL $1 answers.
wait_http() {
    local url=$1 limit=$2 start=$SECONDS
    until curl -s -o /dev/null -m 2 "$url"; do
        if ((SECONDS - start > limit)); then
            log "no answer from $url after ${limit}s"
            return 1
        fi
        sleep 0.5
    done
}

for tool in cargo python3 curl wrk; do
    command -v "$tool" > /dev/null || { log "missing: $tool"; exit 1; }
done
HAVE_OHA=1
command -v oha > /dev/null || { HAVE_OHA=0; log "oha missing: constant-rate latency skipped (cargo install oha)"; }

if [[ -n "${SEAWALL_BIN:-}" ]]; then
    SEAWALL=$SEAWALL_BIN
else
    log "building seawall (release)"
    (cd "$ROOT" && cargo build --release -q -p seawall-cli --bin seawall)
    SEAWALL=${CARGO_TARGET_DIR:-$ROOT/target}/release/seawall
fi

# --- servers -------------------------------------------------------------
CHAOS_PORT=$(free_port)
setsid "$SEAWALL" chaos --addr "127.0.0.1:$CHAOS_PORT" > "$WORK/chaos.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$CHAOS_PORT/_chaos/journal" 30

# The gateway in both of its serving modes: the default (one multi-threaded
# tokio runtime, work stealing) and --threads N (a single-threaded runtime
# per thread, each with its own listener and upstream connections).
GW_PORT=$(free_port)
setsid "$SEAWALL" gateway --listen "127.0.0.1:$GW_PORT" \
    --route "main=openai@http://127.0.0.1:$CHAOS_PORT" > "$WORK/gateway.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$GW_PORT/healthz" 30
THREADS=${THREADS:-$(nproc)}
GW_PATHS=(gateway)
if ((THREADS > 0)); then
    GWT_PORT=$(free_port)
    setsid "$SEAWALL" gateway --threads "$THREADS" --listen "127.0.0.1:$GWT_PORT" \
        --route "main=openai@http://127.0.0.1:$CHAOS_PORT" > "$WORK/gateway-threads.log" 2>&1 &
    PIDS+=($!)
    wait_http "http://127.0.0.1:$GWT_PORT/healthz" 30
    GW_PATHS+=(gateway_threads)
fi

# LiteLLM keeps working through requests whose clients went away (a closed
# loop leaves up to 512 of them behind), so every LiteLLM run starts from a
# freshly started proxy: the backlog of one run must not weigh on the next.
LL_PID=
stop_litellm() {
    if [[ -n $LL_PID ]]; then
        kill -TERM -- "-$LL_PID" 2>/dev/null || true
        local start=$SECONDS
        while kill -0 "$LL_PID" 2>/dev/null && ((SECONDS - start < 15)); do sleep 0.2; done
        kill -KILL -- "-$LL_PID" 2>/dev/null || true
        local pid kept=()
        for pid in "${PIDS[@]}"; do [[ $pid == "$LL_PID" ]] || kept+=("$pid"); done
        PIDS=("${kept[@]}")
        LL_PID=
    fi
}
start_litellm() {
    stop_litellm
    LL_PORT=$(free_port)
    (
        unset DATABASE_URL
        export LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_TELEMETRY=False LITELLM_LOG=ERROR
        exec setsid "$VENV/bin/litellm" --config "$WORK/litellm.yaml" \
            --host 127.0.0.1 --port "$LL_PORT" --num_workers 1
    ) >> "$WORK/litellm.log" 2>&1 &
    LL_PID=$!
    PIDS+=("$LL_PID")
    URL[litellm]="http://127.0.0.1:$LL_PORT/v1/chat/completions"
    if ! wait_http "http://127.0.0.1:$LL_PORT/health/liveliness" 180; then
        log "LiteLLM did not start:"
        tail -n 30 "$WORK/litellm.log" >&2
        return 1
    fi
}

declare -A URL=(
    [direct]="http://127.0.0.1:$CHAOS_PORT/v1/chat/completions"
    [gateway]="http://127.0.0.1:$GW_PORT/v1/chat/completions"
    [gateway_threads]="http://127.0.0.1:${GWT_PORT:-0}/v1/chat/completions"
)
LITELLM=0
if [[ -z "${SKIP_LITELLM:-}" ]]; then
    VENV=${LITELLM_VENV:-$WORK/venv}
    if [[ ! -x "$VENV/bin/litellm" ]]; then
        log "installing litellm[proxy]==$LITELLM_VERSION into $VENV"
        python3 -m venv "$VENV"
        timeout 900 "$VENV/bin/pip" install -q "litellm[proxy]==$LITELLM_VERSION" \
            > "$WORK/pip.log" 2>&1 || { log "pip failed:"; tail -n 20 "$WORK/pip.log" >&2; }
    fi
    if [[ -x "$VENV/bin/litellm" ]]; then
        # One model, gpt-x, to the chaos server's OpenAI endpoint; the fault
        # header rides along as a route header (LiteLLM does not forward
        # client headers by default). Retries on, no database, no key.
        cat > "$WORK/litellm.yaml" << EOF
model_list:
  - model_name: gpt-x
    litellm_params:
      model: openai/gpt-x
      api_base: http://127.0.0.1:$CHAOS_PORT/v1
      api_key: sk-bench
      extra_headers:
        x-chaos-fault: "$FAULT"
router_settings:
  num_retries: 2
litellm_settings:
  num_retries: 2
  request_timeout: 60
  set_verbose: false
  json_logs: false
EOF
        if start_litellm; then
            LITELLM=1
        fi
    fi
fi

PATHS=(direct "${GW_PATHS[@]}")
((LITELLM)) && PATHS+=(litellm)

body() { # $1 = unary|stream
    local stream=false
    [[ $1 == stream ]] && stream=true
    printf '{"model":"gpt-x","stream":%s,"messages":[{"role":"user","content":"hi"}]}' "$stream"
}

# Every path must deliver the whole answer (token w64) before we time it.
for path in "${PATHS[@]}"; do
    for kind in unary stream; do
        out=$(curl -s -m 30 "${URL[$path]}" -H 'content-type: application/json' \
            -H 'authorization: Bearer sk-bench' -H "x-chaos-fault: $FAULT" -d "$(body "$kind")")
        if [[ $out != *"w$TOKENS"* ]]; then
            log "sanity check failed: $path $kind answered: ${out:0:300}"
            exit 1
        fi
    done
done
log "sanity: every path answers all $TOKENS tokens, unary and streamed"
# LiteLLM keeps working after it answers (48 % of a core in `ps` during
# the first direct run): it stops here, so it shares no CPU with the other
# paths, and starts afresh for each of its own runs.
stop_litellm

cat > "$WORK/post.lua" << 'EOF'
wrk.method = "POST"
wrk.body = os.getenv("WRK_BODY")
wrk.headers["content-type"] = "application/json"
wrk.headers["authorization"] = "Bearer sk-bench"
wrk.headers["x-chaos-fault"] = os.getenv("WRK_FAULT")
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d\n", summary.requests, summary.duration,
    e.status, e.connect + e.read + e.write + e.timeout))
end
EOF

RESULTS=$WORK/results.tsv
: > "$RESULTS"

# Closed loop: $1 path, $2 kind, $3 connections, $4 seconds. Appends
# "sat path kind conns ok_rps errors".
closed_loop() {
    local path=$1 kind=$2 conns=$3 secs=$4 out line
    out=$(WRK_BODY=$(body "$kind") WRK_FAULT=$FAULT timeout $((secs + 90)) \
        wrk -t2 -c"$conns" -d"${secs}s" --timeout 60s -s "$WORK/post.lua" "${URL[$path]}" 2>&1) || true
    line=$(grep '^RESULT' <<< "$out" || true)
    if [[ -z $line ]]; then
        log "wrk failed: $path $kind $conns: $out"
        printf 'sat\t%s\t%s\t%s\tNA\tNA\n' "$path" "$kind" "$conns" >> "$RESULTS"
        return
    fi
    read -r _ requests duration_us status_errors socket_errors <<< "$line"
    python3 -c "import sys; r,d,s,e=map(int,sys.argv[1:]); print('sat\t$path\t$kind\t$conns\t%.0f\t%d' % ((r-s)/(d/1e6), s+e))" \
        "$requests" "$duration_us" "$status_errors" "$socket_errors" >> "$RESULTS"
    log "closed loop $path $kind c=$conns: $(tail -n 1 "$RESULTS" | cut -f5,6)"
}

# Constant rate: $1 path, $2 kind, $3 rate, $4 seconds. Appends
# "lat path kind rate p50_ms p99_ms achieved_rps errors".
constant_rate() {
    local path=$1 kind=$2 rate=$3 secs=$4 json
    json=$WORK/oha-$path-$kind-$rate.json
    timeout $((secs + 60)) oha --no-tui --output-format json --latency-correction \
        -q "$rate" -z "${secs}s" -c 64 -t 10s -m POST \
        -H 'content-type: application/json' -H 'authorization: Bearer sk-bench' \
        -H "x-chaos-fault: $FAULT" -d "$(body "$kind")" "${URL[$path]}" > "$json" 2> "$WORK/oha.err" || true
    python3 - "$json" "$path" "$kind" "$rate" >> "$RESULTS" << 'EOF'
import json, sys
path, kind, rate = sys.argv[2:5]
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"lat\t{path}\t{kind}\t{rate}\tNA\tNA\tNA\tNA")
    sys.exit(0)
p = r["latencyPercentiles"]
ok = sum(v for k, v in r.get("statusCodeDistribution", {}).items() if k.startswith("2"))
# Requests still in flight when -z ends are cut by oha, not failed.
errs = {k: v for k, v in r.get("errorDistribution", {}).items() if k != "aborted due to deadline"}
total = sum(r.get("statusCodeDistribution", {}).values()) + sum(errs.values())
errors = total - ok
print(f"lat\t{path}\t{kind}\t{rate}\t{p['p50']*1e3:.3f}\t{p['p99']*1e3:.3f}\t{r['summary']['requestsPerSec']:.0f}\t{errors}")
EOF
    log "constant rate $path $kind q=$rate: $(tail -n 1 "$RESULTS" | cut -f5-8)"
}

# --- (a) throughput at saturation, (b) added latency at a fixed rate ------
# direct and the gateway first, then LiteLLM (restarted before each of its
# runs), so that LiteLLM's leftover work never shares the CPU with them.
for kind in unary stream; do
    for path in direct "${GW_PATHS[@]}"; do
        closed_loop "$path" "$kind" 16 2 2> /dev/null # warm-up, discarded
        sed -i '$d' "$RESULTS"
        for conns in $CONNS; do
            closed_loop "$path" "$kind" "$conns" "$SAT_SECS"
        done
    done
done
if ((HAVE_OHA)); then
    for kind in unary stream; do
        constant_rate direct "$kind" "$RATE" "$LAT_SECS"
        for path in "${GW_PATHS[@]}"; do
            constant_rate "$path" "$kind" "$RATE" "$LAT_SECS"
        done
    done
fi
if ((LITELLM)); then
    for kind in unary stream; do
        for conns in $CONNS; do
            start_litellm
            closed_loop litellm "$kind" 16 2 2> /dev/null # warm-up, discarded
            sed -i '$d' "$RESULTS"
            closed_loop litellm "$kind" "$conns" "$LL_SAT_SECS"
        done
    done
    if ((HAVE_OHA)); then
        for kind in unary stream; do
            # A third of LiteLLM's own closed-loop throughput for this kind.
            rate=${LITELLM_RATE:-}
            if [[ -z $rate ]]; then
                sat=$(awk -F'\t' -v k="$kind" '$1=="sat" && $2=="litellm" && $3==k && $4==16 {print $5}' "$RESULTS")
                rate=$(python3 -c "import sys; print(max(2, int(float(sys.argv[1]) / 3)))" "${sat:-6}")
            fi
            constant_rate direct "$kind" "$rate" "$LAT_SECS"
            start_litellm
            constant_rate litellm "$kind" "$rate" "$LAT_SECS"
        done
    fi
fi

# --- the table --------------------------------------------------------------
{
    echo "# $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# seawall $(git -C "$ROOT" rev-parse --short HEAD), litellm $LITELLM_VERSION (${LITELLM}=running), $TOKENS tokens per answer"
    echo "# gateway: the default runtime; gateway --threads: --threads $THREADS"
} >&2
python3 - "$RESULTS" << 'EOF'
import sys
from collections import defaultdict
sat, lat = {}, {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if f[0] == "sat":
        sat[(f[1], f[2], f[3])] = (f[4], f[5])
    elif f[0] == "lat":
        lat[(f[1], f[2], f[3])] = f[4:]
conns = sorted({int(k[2]) for k in sat})
paths = [p for p in ("direct", "gateway", "gateway_threads", "litellm") if any(k[0] == p for k in sat)]
label = {"gateway_threads": "gateway --threads"}
print("(a) closed loop, successful req/s (errors), wrk -t2")
print()
print("| answer | path | " + " | ".join(f"{c} conns" for c in conns) + " |")
print("|---|---|" + "---|" * len(conns))
for kind in ("unary", "stream"):
    for p in paths:
        cells = []
        for c in conns:
            rps, err = sat.get((p, kind, str(c)), ("NA", "NA"))
            cells.append(f"{rps} ({err})" if err not in ("0", "NA") else rps)
        print(f"| {kind} | {label.get(p, p)} | " + " | ".join(cells) + " |")
    for g_path in [p for p in paths if p.startswith("gateway")] if "litellm" in paths else []:
        cells = []
        for c in conns:
            g, l = sat.get((g_path, kind, str(c))), sat.get(("litellm", kind, str(c)))
            try:
                cells.append(f"{float(g[0]) / float(l[0]):.0f}×")
            except Exception:
                cells.append("NA")
        print(f"| {kind} | {label.get(g_path, g_path)} / litellm | " + " | ".join(cells) + " |")
if lat:
    print()
    print("(b) constant offered rate, oha -c 64 --latency-correction; added = path − direct at the same rate")
    print()
    print("| answer | path | offered req/s | achieved req/s | errors | p50 ms | p99 ms | added p50 ms | added p99 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in ("unary", "stream"):
        for (p, k, rate), v in sorted(lat.items(), key=lambda kv: (-int(kv[0][2]), kv[0][0])):
            if k != kind:
                continue
            p50, p99, achieved, errors = v
            d = lat.get(("direct", kind, rate))
            try:
                a50 = f"{float(p50) - float(d[0]):+.3f}" if p != "direct" else ""
                a99 = f"{float(p99) - float(d[1]):+.3f}" if p != "direct" else ""
            except Exception:
                a50 = a99 = "NA"
            print(f"| {kind} | {label.get(p, p)} | {rate} | {achieved} | {errors} | {p50} | {p99} | {a50} | {a99} |")
EOF

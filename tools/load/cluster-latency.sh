#!/usr/bin/env bash
# Command→diff through the owner gateway vs through another (proxied over NATS): starts one
# nats-server (JetStream on disk) and GATEWAYS (default 3) `vestibule serve` in cluster mode on it,
# each with the load limits of tools/load/src/gateway_process.rs, runs vestibule-load against all of
# them (`--url` each, `--nats` for the lost-command check on the shared stream) with the arguments
# given, then stops everything and removes its directory. The report's
# `latency.command_to_diff_by_class` splits "via the owner gateway" from "via another gateway (proxied)".
#
#   tools/load/cluster-latency.sh --sessions 300 --ramp 10 --duration 60 --scenario reconnect-storm --think-ms 1000 --report r.json
#
# BIN_DIR holds `vestibule` and `vestibule-load` (default: target/release); NATS_PORT (default 14322).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
. scripts/lib/common.sh
. scripts/lib/nats.sh
ensure_nats
bin_dir="${BIN_DIR:-$root/target/release}"
gateways="${GATEWAYS:-3}"
port="${NATS_PORT:-14322}"
for b in vestibule vestibule-load; do
    [ -x "$bin_dir/$b" ] || die "no $bin_dir/$b (cargo build --release -p vestibule-gateway -p vestibule-load)"
done
dir="$(mktemp -d "${TMPDIR:-/tmp}/vestibule-cluster.XXXXXX")"
pids=()
cleanup() {
    # Gateways first (newest first), NATS last: a gateway whose NATS went away first exits with an error.
    local i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[$i]}" 2>/dev/null || true; wait "${pids[$i]}" 2>/dev/null || true; done
    [ -n "${KEEP_CLUSTER:-}" ] && say "files kept in $dir" || rm -rf "$dir"
}
trap cleanup EXIT
"$NATS_SERVER_BIN" -js -a 127.0.0.1 -p "$port" -sd "$dir/nats" 2>"$dir/nats.log" &
pids+=($!)
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
cat >"$dir/gw.toml" <<TOML
[limits]
connections_per_ip = 1000000
max_connections = 1000000
commands_per_second = 1000
command_burst = 1000
sessions_per_minute = 1000000
session_burst = 1000000
resumes_per_minute = 1000000
resume_burst = 1000000
session_resumes_per_minute = 1000000
session_resume_burst = 1000000
client_log_bytes_per_hour = 1099511627776

[store]
backend = "jetstream"

[store.jetstream]
servers = ["nats://127.0.0.1:$port"]
replicas = 1

[cluster]
enabled = true
TOML
urls=()
for i in $(seq "$gateways"); do
    mkdir -p "$dir/gw$i"
    VESTIBULE_LOG=error "$bin_dir/vestibule" serve --listen 127.0.0.1:0 --data "$dir/gw$i" --config "$dir/gw.toml" \
        --static-dir "$dir/no-static" >"$dir/gw$i.out" &
    pids+=($!)
    for _ in $(seq 300); do grep -q 'listening on' "$dir/gw$i.out" 2>/dev/null && break; sleep 0.1; done
    addr="$(sed -n 's|^vestibule listening on http://||p' "$dir/gw$i.out" | head -1)"
    [ -n "$addr" ] || die "gateway $i did not start"
    urls+=(--url "ws://$addr")
done
say "nats on $port, gateways: ${urls[*]}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
"$bin_dir/vestibule-load" "${urls[@]}" --nats "nats://127.0.0.1:$port" "$@" || status=$?
say "load average after the run $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"

#!/usr/bin/env bash
# The `account` load scenario against the devnet: starts scripts/lib/devnet.sh's two anvils (demo
# ERC-20 deployed, dev wallet funded) in a temporary directory, runs vestibule-load on it with the
# arguments given, then stops the chains and removes their directory. An interrupted run stops them
# too (the devnet's traps; anvil also dies with this shell through its parent-death signal).
#
#   tools/load/run-account.sh --sessions 100 --addresses 10 --cycles 3 --think-ms 500 --report r.json
#
# LOAD_BIN picks the harness (not VESTIBULE_…: the gateway reads those as its configuration) (default: target/release/vestibule-load); it starts the
# `vestibule` binary beside it unless --url or --gateway-bin says otherwise.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
. scripts/lib/common.sh
. scripts/lib/devnet.sh
load_bin="${LOAD_BIN:-$root/target/release/vestibule-load}"
[ -x "$load_bin" ] || die "no $load_bin (cargo build --release -p vestibule-gateway -p vestibule-load)"
dir="$(mktemp -d "${TMPDIR:-/tmp}/vestibule-load-devnet.XXXXXX")"
start_devnet "$dir"
# A child, not exec: exec would replace this shell and its traps, leaving the chains running.
status=0
"$load_bin" --scenario account --devnet "$DEVNET_DIR" "$@" || status=$?
stop_devnet
# KEEP_DEVNET=1 keeps the directory (anvil's logs) for a look afterwards.
if [ -z "${KEEP_DEVNET:-}" ]; then rm -rf "$dir"; else say "devnet files kept in $dir"; fi
exit "$status"

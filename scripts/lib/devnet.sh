# The local devnet: two anvil chains (chain ids 31337 and 31338) on free loopback ports, the demo
# ERC-20 (tests/peers/contracts/DemoToken.sol, OpenZeppelin) deployed on both, and the dev wallet
# (tests/peers/dev-wallet.json) funded with 1000 ETH and the token's whole supply on both; and the
# local Solana peer (tests/peers/solana/server.mjs: LiteSVM behind JSON-RPC, answering as Solana
# Devnet) with the dev Solana wallet (tests/peers/solana-dev-key.json) funded with 10 SOL and 1000
# of a demo SPL mint (VDS, 6 decimals).
# Sourced, not executed; needs common.sh and peers.sh (sourced here if the caller has not).
# `./scripts/run` starts it by default (decision 0909).
#
#   . scripts/lib/devnet.sh
#   start_devnet [DIR]   # starts and sets up the chains; DIR (default: a new temporary directory,
#                        # removed again by stop_devnet) gets devnet.json, chain.toml, the pids
#                        # (anvils in pids, the Solana peer in solana.pid), anvil's and the peer's
#                        # logs and solana.json (what the peer holds). Exports DEVNET_DIR,
#                        # DEVNET_FILE (devnet.json: every network, the Solana one included, which
#                        # the gateway reads) and DEVNET_CHAIN_CONFIG (chain.toml: the EVM chains).
#   stop_devnet          # stops every process start_devnet started (idempotent)
#   run_orphan_proof CMD...  # runs CMD in the background under the parent-death signal; sets $!
#
# start_devnet traps EXIT, INT and TERM to stop the chains with the calling shell; a caller that
# then `exec`s another program replaces the shell and its traps, so run the program as a child
# and wait for it instead (scripts/run does, and sets traps of its own that stop it too). Each
# process started here also gets SIGTERM if the shell dies without running its traps (SIGKILL),
# through the parent-death signal (setpriv --pdeathsig, util-linux), so nothing is orphaned.

if ! declare -F ensure_peers >/dev/null 2>&1; then
    . "$(dirname "${BASH_SOURCE[0]}")/peers.sh"
fi

DEVNET_CHAIN_IDS=(31337 31338)
DEVNET_PIDS=()
# The directory start_devnet made itself (and stop_devnet removes); empty when the caller named one.
_DEVNET_TEMP_DIR=""

stop_devnet() {
    local pid
    for pid in "${DEVNET_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${DEVNET_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    DEVNET_PIDS=()
    if [ -n "$_DEVNET_TEMP_DIR" ]; then rm -rf "$_DEVNET_TEMP_DIR"; _DEVNET_TEMP_DIR=""; fi
}

# `run_orphan_proof CMD...`: CMD in the background, as this shell's own child (so `$!` and `wait`
# work), with SIGTERM as its parent-death signal: it is stopped when this shell dies, even by
# SIGKILL. (A shell killed in the instant between the fork and setpriv's prctl would go unnoticed.)
# Without setpriv (not util-linux), CMD runs plainly and only the traps stop it.
run_orphan_proof() {
    if command -v setpriv >/dev/null 2>&1; then
        setpriv --pdeathsig TERM -- "$@" &
    else
        "$@" &
    fi
}

# Starts one anvil on a port the kernel picks and waits until it listens; sets _DEVNET_URL. Runs in
# this shell (never in a $(...) subshell): anvil must be this shell's child, for `wait` and for the
# parent-death signal.
_devnet_start_anvil() { # _devnet_start_anvil CHAIN_ID DIR
    local chain_id="$1" dir="$2" log="$2/anvil-$1.log" tries listening pid
    run_orphan_proof "$ANVIL_BIN" --host 127.0.0.1 --port 0 --chain-id "$chain_id" >"$log" 2>&1 </dev/null
    pid="$!"
    DEVNET_PIDS+=("$pid")
    echo "$pid" >>"$dir/pids"
    for tries in $(seq 1 300); do
        listening="$(grep -m1 -o 'Listening on [0-9.:]*' "$log" 2>/dev/null || true)"
        if [ -n "$listening" ]; then
            _DEVNET_URL="http://${listening#Listening on }"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "anvil (chain $chain_id) exited before listening"; }
        sleep 0.1
    done
    die "anvil (chain $chain_id) did not listen within 30 s (log: $log)"
}

# Starts the Solana peer on a port the kernel picks, funds the dev Solana wallet and creates the
# demo mint (tests/peers/scripts/solana-peer.mjs), and waits until it wrote DIR/solana.json (after it
# listens); sets _DEVNET_SOLANA (that file). Like anvil: this shell's child, under the parent-death
# signal.
_devnet_start_solana() { # _devnet_start_solana DIR
    local dir="$1" log="$1/solana.log" out="$1/solana.json" tries pid
    run_orphan_proof node "$PEERS_DIR/scripts/solana-peer.mjs" --out "$out" --symbol VDS --name "Vestibule Demo SPL" >"$log" 2>&1 </dev/null
    pid="$!"
    DEVNET_PIDS+=("$pid")
    echo "$pid" >"$dir/solana.pid"
    for tries in $(seq 1 600); do
        if [ -s "$out" ]; then
            _DEVNET_SOLANA="$out"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "the Solana peer exited before serving"; }
        sleep 0.1
    done
    die "the Solana peer did not serve within 60 s (log: $log)"
}

start_devnet() { # start_devnet [DIR]
    ensure_peers
    local dir="${1:-}"
    if [ -z "$dir" ]; then
        dir="$(mktemp -d "${TMPDIR:-/tmp}/vestibule-devnet.XXXXXX")"
        _DEVNET_TEMP_DIR="$dir"
    fi
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    rm -f "$dir/pids" "$dir/solana.pid" "$dir/solana.json" "$dir/devnet.json" "$dir/chain.toml"

    trap stop_devnet EXIT
    trap 'stop_devnet; exit 130' INT
    trap 'stop_devnet; exit 143' TERM

    local chain_id chains=()
    for chain_id in "${DEVNET_CHAIN_IDS[@]}"; do
        _devnet_start_anvil "$chain_id" "$dir"
        chains+=("$chain_id=$_DEVNET_URL")
    done

    _devnet_start_solana "$dir"

    say "devnet: ${chains[*]} solana=$_DEVNET_SOLANA"
    # Under the parent-death signal too: a run killed during setup leaves no node script behind.
    run_orphan_proof node "$PEERS_DIR/scripts/devnet-setup.mjs" "$dir" "${chains[@]}" "solana=$_DEVNET_SOLANA" </dev/null
    wait "$!" || die "devnet setup failed"
    export DEVNET_DIR="$dir" DEVNET_FILE="$dir/devnet.json" DEVNET_CHAIN_CONFIG="$dir/chain.toml"
    say "devnet ready: $DEVNET_FILE"
}

# Local test peers: anvil (a local Ethereum node), solc-js (the Solidity compiler), the Solana
# peer's LiteSVM binding and the OIDC provider of the social-login tests, all from npm, installed in tests/peers/node_modules. Sourced, not executed; needs common.sh (sourced here if the
# caller has not). Every function is idempotent: it installs only what is missing.
#
#   . scripts/lib/peers.sh
#   ensure_peers        # npm ci in tests/peers when needed; exports ANVIL_BIN
#   build_contracts     # recompile tests/peers/contracts/*.sol into their committed JSON artifacts
#
# The Rust tests find anvil through ANVIL_BIN, else at the path anvil_path prints.

if ! declare -F ensure_npm_deps >/dev/null 2>&1; then
    . "$(dirname "${BASH_SOURCE[0]}")/common.sh"
fi

PEERS_DIR="$ROOT/tests/peers"

# The anvil binary from the npm package @foundry-rs/anvil-linux-amd64 (tests/peers depends on it
# directly: the @foundry-rs/anvil wrapper's other per-platform packages are not in the registry this
# workplace reaches, which makes npm ci refuse the lock file). Linux x86-64 only.
anvil_path() {
    case "$(uname -sm)" in
        "Linux x86_64") ;;
        *) die "tests/peers installs anvil for Linux x86-64 only, not $(uname -sm)" ;;
    esac
    printf '%s\n' "$PEERS_DIR/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"
}

ensure_peers() {
    ensure_npm_deps "$PEERS_DIR"
    local anvil
    anvil="$(anvil_path)"
    if [ ! -x "$anvil" ]; then
        # A node_modules from an older lock file, or an interrupted install: install afresh.
        say "reinstalling npm packages in tests/peers (anvil missing)"
        (cd "$PEERS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    fi
    [ -x "$anvil" ] || die "anvil is not at $anvil after npm ci in tests/peers"
    [ -f "$PEERS_DIR/node_modules/litesvm-linux-x64-gnu/package.json" ] ||
        (cd "$PEERS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    # The OIDC provider of the social-login tests (tests/peers/oidc.mjs), added after the others.
    [ -f "$PEERS_DIR/node_modules/oauth2-mock-server/package.json" ] ||
        (cd "$PEERS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    export ANVIL_BIN="$anvil"
}

ensure_anvil() {
    ensure_peers
}

build_contracts() {
    ensure_peers
    say "compiling tests/peers/contracts with solc-js"
    (cd "$PEERS_DIR" && node scripts/compile-contracts.mjs)
}

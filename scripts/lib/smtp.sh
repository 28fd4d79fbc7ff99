# An SMTP sink for the tests of the embedded wallet's mailer (embedded/): Python's aiosmtpd, which
# stores every received mail in a maildir. Sourced, not executed; needs common.sh (sourced here if
# the caller has not).
#
#   . scripts/lib/smtp.sh
#   ensure_smtp_sink     # installs aiosmtpd into .cache/smtp-venv when missing; exports SMTP_SINK_PYTHON
#
# The tests start it themselves:
#   $SMTP_SINK_PYTHON -m aiosmtpd -n -l 127.0.0.1:PORT -c aiosmtpd.handlers.Mailbox DIR
# and find the python at SMTP_SINK_PYTHON, else at the path smtp_sink_python prints.
# Why a real server: the mailer's SMTP dialogue (EHLO, MAIL FROM, DATA, quoting) is what fails in
# production, and a recording fake would not exercise it.

if ! declare -F say >/dev/null 2>&1; then
    . "$(dirname "${BASH_SOURCE[0]}")/common.sh"
fi
if ! declare -F ensure_python_venv >/dev/null 2>&1; then
    . "$(dirname "${BASH_SOURCE[0]}")/nats.sh"
fi

SMTP_VENV="$ROOT/.cache/smtp-venv"
SMTP_SINK_PIP_SPEC='aiosmtpd>=1.4,<2'

smtp_sink_python() {
    printf '%s\n' "$SMTP_VENV/bin/python"
}

ensure_smtp_sink() {
    local python
    python="$(smtp_sink_python)"
    if [ -x "$python" ] && "$python" -c 'import aiosmtpd' >/dev/null 2>&1; then
        export SMTP_SINK_PYTHON="$python"
        return 0
    fi
    say "installing the SMTP test sink ($SMTP_SINK_PIP_SPEC from PyPI) into ${SMTP_VENV#$ROOT/}"
    ensure_python_venv
    [ -x "$SMTP_VENV/bin/pip" ] || { rm -rf "$SMTP_VENV"; python3 -m venv "$SMTP_VENV"; }
    "$SMTP_VENV/bin/pip" install --quiet --disable-pip-version-check "$SMTP_SINK_PIP_SPEC"
    "$python" -c 'import aiosmtpd' || die "pip install $SMTP_SINK_PIP_SPEC did not provide aiosmtpd in $python"
    export SMTP_SINK_PYTHON="$python"
}

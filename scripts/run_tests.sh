#!/usr/bin/env bash
# Install kprof from this checkout with everything its tests need, then run the test suite:
#   scripts/run_tests.sh [pytest options...]
# Installs (each only when missing, saying so): kprof with its `test` and `dashboard` extras (pytest,
# hypothesis, ruff, streamlit, plotly), Ray (the fan-out's Ray executor is tested against a real local
# instance), Playwright's Python client and, when running as root where apt-get
# exists, Debian's chromium for the dashboard's browser test. What cannot be installed makes the tests
# that need it skip with the reason. Without a GPU, kernels run under Triton's interpreter and GPU-only
# tests skip.
set -euo pipefail
KPROF_EXTRAS=test,dashboard
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"

say() { echo "run_tests: $*" >&2; }
need() {  # need MODULE PIP_SPEC...: pip-install the specs when MODULE does not import
  local mod="$1"; shift
  if ! "$PY" -c "import $mod" 2>/dev/null; then
    say "installing $* (for the tests)"
    "$PY" -m pip install --quiet "$@" || say "could not install $*; the tests that need it will skip"
  fi
}
need pytest "pytest>=8"
need hypothesis "hypothesis>=6"
need streamlit "streamlit>=1.40"
need plotly "plotly>=5.20"
need playwright playwright
need ruff "ruff==0.17.6"
need ray "ray>=2.9"

# the dashboard's browser test drives Debian's chromium (Playwright's own browser download is not used)
if [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    say "installing Debian's chromium with apt-get (for the dashboard's browser test)"
    lists="$(mktemp -d)"  # private apt lists: leaves the system's package lists alone
    mkdir -p "$lists/partial"
    apt_opts=(-o "Dir::State::Lists=$lists" -q)
    { apt-get "${apt_opts[@]}" update >/dev/null && apt-get "${apt_opts[@]}" install -y chromium >/dev/null; } \
      || say "could not install chromium; the dashboard's browser test will skip"
    rm -rf "$lists"
  else
    say "no /usr/bin/chromium and no root apt-get to install it: the dashboard's browser test will skip"
  fi
fi

cd "$ROOT"
say "running pytest $*"
exec "$PY" -m pytest "$@"

#!/usr/bin/env bash
# Install kprof (and pytest) from this checkout if needed, then run the test suite.
# Without a GPU, kernels run under Triton's interpreter and GPU-only tests skip.
set -euo pipefail
KPROF_EXTRAS=test,dashboard
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
"$PY" -c "import pytest" 2>/dev/null || "$PY" -m pip install --quiet "pytest>=8"
# the dashboard's page tests need streamlit and plotly (the profiling path never imports them)
"$PY" -c "import streamlit, plotly" 2>/dev/null || "$PY" -m pip install --quiet "streamlit>=1.40" "plotly>=5.20"
cd "$ROOT"
exec "$PY" -m pytest "$@"

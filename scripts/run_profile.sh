#!/usr/bin/env bash
# Profile every version of a kernel family against PyTorch and print the report:
#   scripts/run_profile.sh rmsnorm [kprof profile options...]
# A thin wrapper over `kprof profile`; installs kprof from this checkout first if needed.
# Without a GPU it runs the Triton versions in Triton's interpreter for correctness only (said loudly).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
if [ $# -eq 0 ]; then
  echo "usage: scripts/run_profile.sh FAMILY [options]   (e.g. scripts/run_profile.sh rmsnorm)" >&2
  exit 2
fi
exec "$PY" -m kprof.cli profile "$@"

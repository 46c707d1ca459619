# Sourced by the scripts in this folder: make sure `kprof` from THIS checkout is importable by $PY.
# On a fresh CPU machine it installs torch 2.13.0 (the local CPU build) and kprof's dependencies;
# on a GPU machine it keeps the torch/triton already there and installs kprof without network access
# when every dependency is present.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
extras="${KPROF_EXTRAS:-}"

kprof_from_here() {
  "$PY" - "$ROOT" <<'PYEOF' 2>/dev/null
import os, sys
import kprof, kprof.kernels, kprof.profilers  # noqa: F401
import torch, triton, pandas, yaml, typer, rich, scipy  # noqa: F401
root = os.path.realpath(sys.argv[1])
sys.exit(0 if os.path.realpath(kprof.__file__).startswith(os.path.join(root, "toolkit")) else 1)
PYEOF
}

if ! kprof_from_here; then
  echo "kprof: installing kprof from $ROOT into $("$PY" -c 'import sys; print(sys.prefix)')" >&2
  if ! "$PY" -c "import torch" 2>/dev/null; then
    echo "kprof: installing torch 2.13.0 (CPU build: the largest download, a minute or more)" >&2
    "$PY" -m pip install --quiet "torch==2.13.0"
  fi
  echo "kprof: installing kprof${extras:+[$extras]} and its dependencies (triton, pandas, scipy, typer, rich...)" >&2
  pip_args=(--quiet --editable "$ROOT${extras:+[$extras]}")
  if "$PY" -c "import setuptools, wheel, sys; sys.exit(0 if int(setuptools.__version__.split('.')[0]) >= 68 else 1)" 2>/dev/null; then
    pip_args=(--no-build-isolation "${pip_args[@]}")  # works offline (the GPU machine has no network)
  fi
  "$PY" -m pip install "${pip_args[@]}"
  kprof_from_here || { echo "kprof: installation did not make kprof importable from $ROOT" >&2; exit 1; }
  echo "kprof: installed" >&2
fi

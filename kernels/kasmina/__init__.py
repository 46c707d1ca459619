"""Kasmina, the seed-lifecycle layer: activations ``x [..., S*C]`` are S chunks ("seeds") of C channels,
each transformed by its own state.

Per-seed state, structure-of-arrays, on the device: ``lifecycle int8[S]`` (0 dormant: identity;
1 active: the seed's blueprint; 2 grafting: ``(1-alpha)*x + alpha*blueprint(x)``), ``blueprint_id int32[S]``
and ``alpha float32[S]``. Blueprint registry ``weights [NB, C, C]``, ``bias [NB, C]``:
``blueprint(chunk) = chunk @ weights[id] + bias[id]``. Every version returns ``(y, telemetry)``, where
``telemetry float32[S, 2]`` holds each seed's output mean and (population) variance.

Versions: ``torch_loop`` (the chunk-by-chunk loop users start from; it reads each seed's state on the
host), ``torch_vectorised`` (one batched product over gathered blueprints), ``torch_compile`` of that,
``triton_branch_free`` (one kernel, state read on the device, telemetry by a PyTorch reduction after it)
and ``triton_telemetry`` (the same kernel with the telemetry accumulated inside it).
"""

from kprof.kernels.kasmina.family import FAMILY
from kprof.registry import load_family_modules

load_family_modules(__name__, __path__)

__all__ = ["FAMILY"]

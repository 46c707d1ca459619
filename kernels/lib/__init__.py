"""The library the kernel families share (not a family: discovery skips it). See ``README.md`` here.

* :mod:`.checks` - the one input-checking API (``validate`` / ``check_inputs`` of every family are built on it).
* :mod:`.launching` - meta-parameters, device capabilities, PDL, TMA readiness, autotuned launches.
* :mod:`.tiles` - building blocks of the tiled matrix-product kernels.
* :mod:`.gated` - what silu_mul and gelu_mul share: kernel building blocks, launch choice, checks, wrappers.
* :mod:`.plans` - what the launch plans of :mod:`kprof.kernels.ops` share (each family keeps its op's plan in
  ``FAMILY/op_plan.py``; the gated families' is in :mod:`.gated`).
* :mod:`.peers` - what peer libraries refuse.
* :mod:`.split_rows` - how few rows wider than one block are split over programs (rmsnorm, add_rmsnorm).
"""

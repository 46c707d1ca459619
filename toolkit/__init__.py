"""kprof: is each version of a Triton kernel correct, how fast is it against PyTorch and its peers,
where does its time go, and did the last change make it better or worse.

The data flows one way: profiler output -> canonical launch table (:mod:`kprof.launch_table`) ->
metrics (:mod:`kprof.metrics`) -> run store (:mod:`kprof.store`) -> report / dashboard.

Importing ``kprof`` is cheap: kernels, torch and triton are imported only where they are used.
"""

__version__ = "0.1.0"

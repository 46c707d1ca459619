"""``kprof dashboard``'s server process: Streamlit's own command line, started after the modules every page
needs are imported.

Streamlit imports an app's modules during the first browser session's script run, so the first visitor
waited for pandas and kprof: 0.6 s of a
3.3 s first visit of Compare on the 2-core dev box. Importing them here, before the server listens, moves
that cost to start-up, where nobody is waiting on a page yet.

    python -m kprof.dashboards.serve run APP.py [streamlit options]
"""

from __future__ import annotations

import sys


def warm() -> None:
    """Import what the pages import, build one figure, and read what the default page shows first (the
    run list and the newest GPU run) into the data module's cache. Streamlit keeps a global
    ``st.cache_data`` cache made before its runtime starts (1.67); where a version does not, this only
    costs the read. A store that cannot be read is left for the page to explain."""
    import importlib
    import logging
    import pkgutil

    from kprof.dashboards import data, figures, html_chart, style, views
    from kprof.dashboards.views import compare, correctness
    from kprof.dashboards.views.common import pickable
    from kprof.errors import KprofError

    for page in pkgutil.iter_modules(views.__path__):
        importlib.import_module(f"{views.__name__}.{page.name}")
    log = logging.getLogger("streamlit.runtime.caching")
    level = log.level
    log.setLevel(logging.ERROR)  # "no runtime found": expected here
    try:
        pool = pickable(data.all_runs(), gpu_only=True)
        if not pool.empty:
            run_id = pool.iloc[0]["id"]
            run = data.get_run(run_id)
            metrics = figures.with_baseline(data.get_metrics(run_id), next(iter(figures.BASELINES)))
            for dtype in metrics["dtype"].dropna().unique()[:1]:
                html_chart.compare_panels(metrics, str(dtype), run.get("ceiling_gbps"))
                table = compare.summary_table(metrics, str(dtype))  # first calls into pandas' Arrow strings
                style.html_table(table, compare.best_shade(table))
                table.to_csv(index=False)
        data.launch_counts()
        warm_trace()
        if len(pool) >= 2:  # the Diff page's default pair: its bootstrap intervals are the slowest first read
            from kprof.dashboards.views.diff import default_pair

            ia, ib = default_pair(pool)
            try:
                data.get_diff(pool.iloc[ia]["id"], pool.iloc[ib]["id"])
            except KprofError:
                pass  # no case in common: the page says so
        correctness.family_tolerances()  # imports the kernel families: seconds, once, before anyone waits
        style.colour("")  # numbers every provider for its colour (the families are imported now)
    except (data.StoreProblem, KprofError):
        pass  # the page shows the store's problem to whoever opens it
    finally:
        log.setLevel(level)
    first_element_check()


def first_element_check() -> None:
    """Streamlit asks once per process, at the first element any script draws, whether it runs in a REPL: it
    reads the whole calling stack with source lines (``inspect.stack``), 0.1-0.2 s of the first visitor's
    script run on the 2-core dev box, where the script thread's stack is deep. Asked here instead, where the
    stack is short; the 'use streamlit run' warning that the same check prints outside a running app is
    switched off for it (the command line's options are read again when the server starts)."""
    import logging

    import streamlit as st
    from streamlit import config

    config.set_option("global.showWarningOnDirectExecution", False)
    log = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    level = log.level
    log.setLevel(logging.ERROR)  # "missing ScriptRunContext": expected here
    try:
        st.empty()
    finally:
        log.setLevel(level)


def warm_trace() -> None:
    """The Trace page's first view (its first source, first case): the launch table read into the cache and its
    summary and timeline built once, so the first visitor waits for neither the read nor the first calls'
    set-up in pandas (together about 0.4 s of that visit's script on the 2-core dev box)."""
    from kprof.analysis import kernel_summary
    from kprof.dashboards import data, timeline
    from kprof.dashboards.views import trace

    sources = trace.source_options(data.all_runs())
    if not sources:
        return
    lt = trace.load(next(iter(sources.values())))
    if lt is None or lt.empty:
        return
    first = lt[lt["case"].isin(trace.run_order(lt)[:1])]
    kernel_summary(first)
    timeline.figure({"A": first}, collapse_ns=trace.GAPS[trace.GAPS_DEFAULT])


def freeze_heap() -> None:
    """Move everything the warm-up made (torch, Triton, the kernel families, pandas, the cached store) out of
    the collector's sight. Streamlit runs a full collection after every script run (``runner.postScriptGC``)
    and it holds the GIL throughout, so the server's event loop stops serving files and messages meanwhile:
    0.20 s per run over the 309k objects of the warmed server on the 2-core dev box, 1 ms after the freeze.
    What the pages allocate later is still collected."""
    import gc

    gc.collect()
    gc.freeze()


def main() -> None:
    warm()
    freeze_heap()
    from streamlit.web import cli

    sys.argv[0] = "streamlit"
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()

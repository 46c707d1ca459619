"""The dashboard's entry script: ``kprof dashboard`` runs ``streamlit run`` on this file.

The page modules live in ``views/``, not ``pages/``: Streamlit treats a ``pages/`` folder beside the entry
script as its older multipage layout, which overrides ``st.navigation`` and left every page blank."""

from __future__ import annotations

import streamlit as st

from kprof.dashboards.views import compare, correctness, diff, roofline, runs, sweep, trace

st.set_page_config(page_title="kprof", layout="wide")
nav = st.navigation(
    [
        st.Page(compare.render, title="Compare", url_path="compare", default=True),
        st.Page(correctness.render, title="Correctness", url_path="correctness"),
        st.Page(runs.render, title="Runs", url_path="runs"),
        st.Page(trace.render, title="Trace", url_path="trace"),
        st.Page(diff.render, title="Diff", url_path="diff"),
        st.Page(roofline.render, title="Roofline", url_path="roofline"),
        st.Page(sweep.render, title="Sweep", url_path="sweep"),
    ]
)
nav.run()

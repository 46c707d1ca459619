"""The Streamlit dashboard. Kept out of the profiling path: nothing here is imported by
``kprof profile``, so profiling runs where streamlit and plotly are not installed."""

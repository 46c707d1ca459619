"""Range markers: how a replay child labels each case (``kprof::<case id>``) for the profiler watching it.

A profiler backend names one of these kinds (:attr:`kprof.profilers.Backend.marker`); the parsers attribute
each launch to the ``kprof::`` range it was issued in (:mod:`kprof.ranges`).

* ``nvtx`` - ``torch.cuda.nvtx`` ranges (nsys, ncu; on ROCm builds the same API emits roctx).
* ``roctx`` - the same calls, named for AMD's tools.
* ``proton`` - ``triton.profiler.scope``; the Proton session is started here too, paused during each
  case's warm-up call (compilation stays out of the data) and finalised at the end.
* ``none`` - no labels (a profiler that records everything and is attributed otherwise).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

MARKERS = ("nvtx", "roctx", "proton", "none")


class MarkerSession:
    """Labels for one replay: ``range(name)`` around each case, ``pause()``/``resume()`` around warm-ups."""

    def range(self, name: str) -> AbstractContextManager[Any]:
        return _nothing()

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def close(self) -> None:
        pass


@contextmanager
def _nothing() -> Iterator[None]:
    yield


class _Nvtx(MarkerSession):
    def __init__(self) -> None:
        import torch

        self._torch = torch

    @contextmanager
    def range(self, name: str) -> Iterator[None]:
        self._torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            self._torch.cuda.nvtx.range_pop()


class _Proton(MarkerSession):
    def __init__(self, path: str, data: str) -> None:
        import triton.profiler as proton

        self._proton = proton
        self._data = data
        self._session = proton.start(path, data=data, hook="triton")

    def range(self, name: str) -> AbstractContextManager[Any]:
        return self._proton.scope(name)

    def pause(self) -> None:
        self._proton.deactivate(self._session)

    def resume(self) -> None:
        self._proton.activate(self._session)

    def close(self) -> None:
        self._proton.finalize(self._session, "chrome_trace" if self._data == "trace" else "hatchet")


def open_marker(kind: str, *, proton_path: str = "", proton_data: str = "trace") -> MarkerSession:
    """The marker session of ``kind`` (one of :data:`MARKERS`)."""
    if kind in ("nvtx", "roctx"):
        import torch

        if not torch.cuda.is_available():  # CPU builds have no NVTX; there is no GPU to profile either
            print("kprof.replay: no GPU, case ranges are not marked", file=sys.stderr)
            return MarkerSession()
        return _Nvtx()
    if kind == "proton":
        return _Proton(proton_path, proton_data)
    if kind == "none":
        return MarkerSession()
    raise ValueError(f"unknown marker {kind!r}; one of {MARKERS}")

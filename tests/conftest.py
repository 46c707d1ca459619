"""Test set-up: without a GPU, Triton kernels run in Triton's interpreter and GPU tests skip cleanly.

TRITON_INTERPRET must be set before any kernel module is imported (``@triton.jit`` reads it when a
kernel is decorated), hence here, at the top of the root conftest.
"""

import os

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if HAS_CUDA else "cpu"


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device() -> str:
    return DEVICE


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "store" / "kprof.db"


DATA = __import__("pathlib").Path(__file__).parent / "data"


@pytest.fixture
def data_file(tmp_path):
    """``data_file("x.csv")``: tests/data/x.csv, or x.csv.gz unpacked into a temporary folder under its name."""
    import gzip
    import shutil

    def get(name: str):
        plain = DATA / name
        if plain.exists():
            return plain
        packed = DATA / (name + ".gz")
        out = tmp_path / name
        with gzip.open(packed, "rb") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return out

    return get

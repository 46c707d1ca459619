from __future__ import annotations

import pytest

from kprof.errors import KprofError, UnknownFamilyError
from kprof.kernels import discover
from kprof.registry import Family, Provider, get_family, parse_shape, shape_str


def test_parse_shape():
    assert parse_shape("4096x4096") == (4096, 4096)
    assert parse_shape("2x3x257") == (2, 3, 257)
    assert parse_shape([1, 64]) == (1, 64)
    assert shape_str((2, 3)) == "2x3"
    for bad in ("", "4096xA", "x", "40x", "4x-4"):
        with pytest.raises(KprofError, match="bad shape"):
            parse_shape(bad)


def test_families_are_discovered_from_folders():
    fams = discover()
    assert "rmsnorm" in fams
    names = set(fams["rmsnorm"].providers)
    assert {
        "triton_one_row",
        "triton_looped",
        "triton_tuned",
        "torch_eager",
        "torch_F",
        "torch_compile",
        "liger",
    } <= names
    kinds = {p.kind for p in fams["rmsnorm"].providers.values()}
    assert kinds == {"triton", "eager", "library", "compile", "peer", "roofline"}  # roofline: copy_bytes


def test_unknown_family_message_lists_known_ones():
    with pytest.raises(UnknownFamilyError, match="known families: .*rmsnorm"):
        get_family("nope")


def test_unknown_provider_message(tmp_path):
    with pytest.raises(KprofError, match="has no provider 'x'; it has: "):
        discover()["rmsnorm"].get_provider("x")


def test_family_needs_a_tolerance_per_dtype(tmp_path):
    with pytest.raises(KprofError, match="no tolerance"):
        Family(
            "t_missing_tol",
            description="",
            package_dir=tmp_path,
            make_inputs=dict,
            oracle=dict,
            bytes_model=lambda s, d: 0,
            flops_model=lambda s, d: 0,
            tolerances={"fp32": 1e-5},
        )


def test_duplicate_provider_and_bad_sweep(tmp_path):
    fam = Family(
        "t_dup",
        description="",
        package_dir=tmp_path,
        make_inputs=dict,
        oracle=dict,
        bytes_model=lambda s, d: 0,
        flops_model=lambda s, d: 0,
        tolerances={"fp32": 1, "bf16": 1, "fp16": 1},
    )
    fam.add_provider(Provider("t_dup", "a", "eager", print, "x"))
    with pytest.raises(KprofError, match="already has"):
        fam.add_provider(Provider("t_dup", "a", "eager", print, "x"))
    with pytest.raises(KprofError, match="no sweep file"):
        fam.sweep()
    (tmp_path / "sweep.yaml").write_text("gpu: {shapes: [[1, 2]]}\n")
    with pytest.raises(KprofError, match="needs a 'gpu:' section"):
        fam.sweep()
    (tmp_path / "sweep.yaml").write_text("gpu: [unclosed\n")
    with pytest.raises(KprofError, match="not valid YAML"):
        fam.sweep()

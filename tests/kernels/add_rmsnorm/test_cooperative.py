"""add_rmsnorm over many rows of 128 KB or more, each row split over programs that meet once
(``kernels/add_rmsnorm/cooperative.py``): the dispatch rule, the kernel one program per row in Triton's
interpreter (the only case it can run: it runs programs one after another), and several programs per row on a
GPU, against the float64 oracle with strided inputs and short last chunks.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.add_rmsnorm import cooperative, tuned
from kprof.kernels.lib import launching
from tests.conftest import HAS_CUDA
from tests.kernels.add_rmsnorm.test_split import _check, _strided_inputs
from tests.kernels.meetings import STARTS, meeting_end, meeting_start, stale_slots

FAM = discover()["add_rmsnorm"]
DTYPES = ["fp32", "bf16", "fp16"]


def test_many_rows_of_128_kb_take_the_cooperative_kernel_on_a_gpu():
    for n, es, rows in ((65536, 2, 128), (131072, 2, 64), (32768, 4, 128), (40000, 4, 10**5)):
        cfg = tuned.choose_config(n, es, rows)
        # 32 KB of the row a program, 32 elements a thread
        assert (cfg.kernel, cfg.rows, cfg.block_n * es, cfg.block_n // (32 * cfg.num_warps)) == (
            "cooperative",
            1,
            32 * 1024,
            32,
        ), (n, es, rows)
        assert cfg.splits * cfg.block_n >= n > (cfg.splits - 1) * cfg.block_n
        assert tuned.choose_config(n, es, rows, cooperative=False).kernel == "looped"
        if es == 2:  # fp16 pipelines wherever this path runs
            assert tuned.choose_config(n, es, rows, fp16=True).kernel == "pipelined"
    # rows under 128 KB, or under 16 MiB of x, keep the other paths
    for n, es, rows in ((32768, 2, 10**5), (65536, 2, 127), (131072, 2, 8), (16384, 4, 4096)):
        assert tuned.choose_config(n, es, rows).kernel in ("looped", "split", "rows"), (n, es, rows)


@pytest.mark.skipif(HAS_CUDA, reason="runs CPU tensors in the interpreter; on a GPU the tests below run it")
@pytest.mark.parametrize("start", STARTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows, n, chunk", [(3, 1000, 1024), (2, 4097, 8192)])
def test_cooperative_kernel_alone_in_its_row(dtype, n_rows, n, chunk, start):
    inp = _strided_inputs(n_rows, n, dtype, "cpu")
    y = torch.full((n_rows, n), float("nan"), dtype=inp["x"].dtype)
    h = torch.full_like(y, float("nan"))
    ws = torch.full((n_rows, 1), float("nan"))
    sync, base = meeting_start(n_rows, start)
    before = sync.clone()
    x, r = inp["x"], inp["residual"]
    cooperative._add_rmsnorm_cooperative_kernel[(n_rows,)](
        x, r, inp["weight"], y, h, ws, sync, base, x.stride(0), r.stride(0), n, inp["eps"],
        CHUNK=chunk, SPLITS=1, SPLITS_POW2=1,
    )  # fmt: skip
    _check(y, h, inp, dtype)
    assert sync.tolist() == meeting_end(before, n_rows)


def test_cooperative_launch_refuses_the_cpu():
    x = torch.randn(4, 100)
    with pytest.raises(ValueError, match="on a GPU"):
        cooperative.launch_cooperative(x, x, torch.randn(100), torch.empty_like(x), torch.empty_like(x), 1e-6, 2, 4)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows, n, splits, warps", [(7, 3001, 3, 4), (300, 65536 + 5, 5, 8), (129, 131072, 8, 8)])
def test_cooperative_kernel_rows_split_over_programs(dtype, n_rows, n, splits, warps):
    """Several programs per row meeting once, on a GPU, three times (a race would show as a moving error);
    through triton_tuned and the ops API too where the dispatch picks the kernel."""
    inp = _strided_inputs(n_rows, n, dtype, "cuda")
    for _ in range(3):
        y = torch.full((n_rows, n), float("nan"), dtype=inp["x"].dtype, device="cuda")
        h = torch.full_like(y, float("nan"))
        cooperative.launch_cooperative(inp["x"], inp["residual"], inp["weight"], y, h, inp["eps"], splits, warps)
        _check(y, h, inp, dtype)
    es = inp["x"].element_size()
    if tuned.choose_config(n, es, n_rows).kernel == "cooperative":
        _check(*FAM.providers["triton_tuned"].fn(**inp), inp, dtype)
        _check(*ops.fused_add_rms_norm(inp["x"], inp["residual"], inp["weight"], inp["eps"]), inp, dtype)


@pytest.mark.skipif(HAS_CUDA, reason="runs CPU tensors in the interpreter; on a GPU the tests below run it")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start", STARTS)
@pytest.mark.parametrize("n_rows, n, chunk, programs", [(5, 1000, 512, 1), (3, 77, 128, 2), (4, 4097, 4096, 3)])
def test_pipelined_kernel_where_one_program_can_finish_a_row(dtype, n_rows, n, chunk, programs, start):
    """The pipelined kernel in the interpreter, which runs programs one after another: the first takes every
    ticket, so rows of one or two chunks (it holds two at a time) are all it can finish. Strided inputs, a
    short last chunk, programs that find no ticket left, from fresh counters and from counters about to wrap;
    every row one generation on, the ticket counter past the last ticket once per program."""
    inp = _strided_inputs(n_rows, n, dtype, "cpu")
    x, r = inp["x"], inp["residual"]
    y = torch.full((n_rows, n), float("nan"), dtype=x.dtype)
    h = torch.full_like(y, float("nan"))
    splits = -(-n // chunk)
    assert splits <= 2
    ws = torch.full((n_rows, splits), float("nan"))
    sync, base = meeting_start(n_rows, start)
    before = sync.clone()
    cooperative._add_rmsnorm_pipelined_kernel[(programs,)](
        x, r, inp["weight"], y, h, ws, sync, base, x.stride(0), r.stride(0), n, n_rows * splits, inp["eps"],
        CHUNK=chunk, SPLITS=splits, SPLITS_POW2=splits,
    )  # fmt: skip
    _check(y, h, inp, dtype)
    assert sync.tolist() == meeting_end(before, n_rows * splits + programs)


@pytest.mark.skipif(HAS_CUDA, reason="runs CPU tensors in the interpreter; on a GPU the tests below run it")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows, n, chunk, programs", [(5, 1000, 512, 1), (3, 77, 128, 2), (4, 4097, 4096, 3)])
def test_slotted_kernel_where_one_program_can_finish_a_row(dtype, n_rows, n, chunk, programs):
    """The slotted kernel in the interpreter, as the pipelined kernel's test (rows of one or two chunks), twice on one
    buffer of slots that starts full of other generations' sums (1e30 and NaN: read as this launch's, they would
    show): each launch reads only its own generation and leaves every slot of its rows at it."""
    inp = _strided_inputs(n_rows, n, dtype, "cpu")
    x, r = inp["x"], inp["residual"]
    splits = -(-n // chunk)
    assert splits <= 2
    slots = stale_slots(n_rows, splits)
    sync = torch.zeros(1, dtype=torch.int32)
    for generation in (7, 8):  # the stale slots hold generations 5 and 6, then the first launch's 7
        y = torch.full((n_rows, n), float("nan"), dtype=x.dtype)
        h = torch.full_like(y, float("nan"))
        base = int(sync[0])
        cooperative._add_rmsnorm_slotted_kernel[(programs,)](
            x, r, inp["weight"], y, h, slots, sync, base, generation, x.stride(0), r.stride(0), n, n_rows * splits,
            inp["eps"], CHUNK=chunk, SPLITS=splits, SPLITS_POW2=splits,
        )  # fmt: skip
        _check(y, h, inp, dtype)
        assert ((slots >> 32) == generation).all()
        assert int(sync[0]) == base + n_rows * splits + programs


def test_pipelined_launch_refuses_the_cpu():
    x = torch.randn(4, 100)
    for launch in (cooperative.launch_pipelined, cooperative.launch_slotted):
        with pytest.raises(ValueError, match="on a GPU"):
            launch(x, x, torch.randn(100), torch.empty_like(x), torch.empty_like(x), 1e-6, 64, 4, 4)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "n_rows, n, chunk, per_sm, warps",
    [(300, 65536, 8192, 4, 8), (777, 100003, 4096, 6, 4), (64, 131072, 4096, 2, 4), (5, 70001, 1024, 8, 4)],
)
def test_pipelined_kernel_many_chunks_a_row(dtype, n_rows, n, chunk, per_sm, warps):
    """The pipelined kernel on a GPU: up to 69 chunks a row, short last chunks, strided inputs, more programs
    than tickets and more than fit at once, three times each (a race would show as a moving error); through
    triton_tuned and the ops API too where the dispatch picks the kernel."""
    inp = _strided_inputs(n_rows, n, dtype, "cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for _ in range(3):
        y = torch.full((n_rows, n), float("nan"), dtype=inp["x"].dtype, device="cuda")
        h = torch.full_like(y, float("nan"))
        cooperative.launch_pipelined(
            inp["x"], inp["residual"], inp["weight"], y, h, inp["eps"], chunk, per_sm * sms, warps
        )
        _check(y, h, inp, dtype)
    es = inp["x"].element_size()
    if tuned.choose_config(n, es, n_rows, fp16=inp["x"].dtype == torch.float16).kernel == "pipelined":
        _check(*FAM.providers["triton_tuned"].fn(**inp), inp, dtype)
        _check(*ops.fused_add_rms_norm(inp["x"], inp["residual"], inp["weight"], inp["eps"]), inp, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "n_rows, n, chunk, per_sm, warps",
    [
        (300, 65536, 8192, 4, 8),
        (777, 100003, 4096, 8, 4),
        (64, 131072, 8192, 3, 16),
        (1025, 70001, 8192, 3, 16),  # an H200's bf16 layout of 131072-column rows, a ragged last chunk
        (5, 70001, 1024, 12, 4),
        (129, 65537, 4096, 4, 8),  # the H200's float32 layout, a last chunk of one element
    ],
)
def test_slotted_kernel_many_chunks_a_row(dtype, n_rows, n, chunk, per_sm, warps):
    """The slotted kernel on a GPU, as the pipelined kernel's test, three launches on the stream's kept slots (each
    a generation on) after one on fewer rows; through triton_tuned and the ops API too where the dispatch picks it."""
    inp = _strided_inputs(n_rows, n, dtype, "cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for rows in (n_rows // 2 or 1, n_rows, n_rows, n_rows):
        part = {k: (v[:rows] if k in ("x", "residual") else v) for k, v in inp.items()}
        y = torch.full((rows, n), float("nan"), dtype=inp["x"].dtype, device="cuda")
        h = torch.full_like(y, float("nan"))
        cooperative.launch_slotted(
            part["x"], part["residual"], part["weight"], y, h, inp["eps"], chunk, per_sm * sms, warps
        )
        _check(y, h, part, dtype)
    es, fast = inp["x"].element_size(), launching.fast_memory(inp["x"])
    cfg = tuned.choose_config(n, es, n_rows, sms, True, inp["x"].dtype == torch.float16, fast)
    if cfg.kernel == "slotted":
        _check(*FAM.providers["triton_tuned"].fn(**inp), inp, dtype)
        _check(*ops.fused_add_rms_norm(inp["x"], inp["residual"], inp["weight"], inp["eps"]), inp, dtype)


def test_many_wide_16bit_rows_take_the_pipelined_kernel():
    """Where the cooperative kernel would run: the pipelined one, chunks covering the row; fp16 with 8 warps and 4
    programs an SM, bf16 from 512 rows to under 8192 with 16 warps and 3 (fewer or more rows keep the cooperative
    kernel); fp32 and the CPU keep what they had."""
    for n, rows in ((65536, 512), (131072, 512), (65537, 10**5), (100000, 2048)):
        for fp16, layout in ((True, (8192, 8, 4)), (False, (8192, 16, 3))):
            cfg = tuned.choose_config(n, 2, rows, fp16=fp16)
            if not fp16 and rows >= 8192:
                assert cfg.kernel == "cooperative", (n, rows)
                continue
            assert (cfg.kernel, cfg.block_n, cfg.num_warps, cfg.programs_per_sm) == ("pipelined", *layout), (n, rows)
            assert cfg.splits * cfg.block_n >= n > (cfg.splits - 1) * cfg.block_n
            plain = tuned.choose_config(n, 2, rows, cooperative=False, fp16=fp16)
            assert plain.kernel not in ("pipelined", "cooperative")
    for n, rows in ((65536, 511), (131072, 64)):
        assert tuned.choose_config(n, 2, rows, fp16=True).kernel == "pipelined", (n, rows)
        assert tuned.choose_config(n, 2, rows).kernel == "cooperative", (n, rows)
    assert tuned.choose_config(131072, 2, 8191).kernel == "pipelined"
    assert tuned.choose_config(131072, 2, 8192).kernel == "cooperative"
    assert tuned.choose_config(65536, 4, 4096, fp16=False).kernel == "cooperative"


def test_an_h200_takes_the_cooperative_kernel_from_8_mib_of_16_bit_rows_too_many_to_split():
    """On an H200 16-bit rows of 128 KB or more meet from 8 MiB of x (an H100 from 16 MiB), in the cooperative kernel's
    own layout in bf16 and fp16 alike; rows few enough to split, fp32 and an H100 keep what they had."""
    for n, rows in ((65536, 64), (65536, 127), (100000, 42), (131072, 34)):
        for fp16 in (False, True):
            cfg = tuned.choose_config(n, 2, rows, fp16=fp16, fast_memory=True)
            assert (cfg.kernel, cfg.block_n, cfg.num_warps) == ("cooperative", 16384, 16), (n, rows, fp16)
            assert cfg.splits * cfg.block_n >= n > (cfg.splits - 1) * cfg.block_n
            assert tuned.choose_config(n, 2, rows, fp16=fp16).kernel not in ("cooperative", "pipelined"), (n, rows)
            assert tuned.choose_config(n, 2, rows, fp16=fp16, cooperative=False, fast_memory=True).kernel not in (
                "pipelined",
                "slotted",
                "cooperative",
            )
    for n, es, rows in ((131072, 2, 32), (65536, 2, 63), (65536, 4, 48), (65535, 2, 127)):
        assert tuned.choose_config(n, es, rows, fast_memory=True) == tuned.choose_config(n, es, rows), (n, es, rows)
    at_16_mib = tuned.choose_config(131072, 2, 64, fp16=True, fast_memory=True)  # 16 MiB: fp16's layout, slotted
    assert at_16_mib == replace(tuned.choose_config(131072, 2, 64, fp16=True), kernel="slotted")


def test_an_h200_pipelines_bf16_from_16_mib_in_its_own_layout_with_the_slotted_meeting():
    """On an H200 bf16 takes the slotted kernel from 16 MiB of x at every row count in 4096-element chunks, 4 warps, 8
    programs an SM (an H100: the cooperative kernel under 512 rows), but from 1024 rows of 131072 columns in the
    H100's bf16 layout (8192-element chunks, 16 warps, 3 an SM; not at widths between, where it compiles to more
    registers than its programs an SM fit); fp16 the slotted kernel in its H100 layout; fp32,
    where an H100 takes the cooperative kernel (16 MiB or more), the slotted kernel in 4096-element chunks of 8 warps,
    4 programs an SM."""
    for n, rows in (
        (65536, 512),
        (131072, 8191),
        (65537, 10**5),
        (100000, 2048),
        (131072, 64),
        (65536, 511),
        (131072, 1024),
    ):
        cfg = tuned.choose_config(n, 2, rows, fast_memory=True)
        # from 1024 rows of 131072 columns, the H100's bf16 layout (16 warps, 8192-element chunks, 3 an SM)
        layout = ("slotted", 8192, 16, 3) if n == 131072 and rows >= 1024 else ("slotted", 4096, 4, 8)
        assert (cfg.kernel, cfg.block_n, cfg.num_warps, cfg.programs_per_sm) == layout, (n, rows)
        assert cfg.splits * cfg.block_n >= n > (cfg.splits - 1) * cfg.block_n
        h100_fp16 = tuned.choose_config(n, 2, rows, fp16=True)
        assert h100_fp16.kernel == "pipelined"
        assert tuned.choose_config(n, 2, rows, fp16=True, fast_memory=True) == replace(h100_fp16, kernel="slotted")
        fp32, h100_fp32 = tuned.choose_config(n, 4, rows, fast_memory=True), tuned.choose_config(n, 4, rows)
        if h100_fp32.kernel == "cooperative":
            assert (fp32.kernel, fp32.block_n, fp32.num_warps, fp32.programs_per_sm) == ("slotted", 4096, 8, 4)
            assert fp32.splits * fp32.block_n >= n > (fp32.splits - 1) * fp32.block_n
        else:
            assert fp32 == h100_fp32, (n, rows)
        assert tuned.choose_config(n, 2, rows, cooperative=False, fast_memory=True).kernel not in (
            "pipelined",
            "slotted",
            "cooperative",
        )
    for n, rows in ((65536, 511), (131072, 64), (65536, 128)):
        assert tuned.choose_config(n, 2, rows).kernel == "cooperative", (n, rows)
    # the edges of the widest rows' class: 131072 columns from 1024 rows (at 81920-114688 columns its layout compiles to
    # more registers than its 3 programs an SM fit)
    for n, rows in ((131072, 1023), (65536, 1024), (65536, 32768), (98304, 1024), (131071, 8192), (131073, 8192)):
        assert tuned.choose_config(n, 2, rows, fast_memory=True).num_warps == 4, (n, rows)
    widest = tuned.choose_config(131072, 2, 1024, fast_memory=True)
    assert widest == replace(tuned.choose_config(131072, 2, 1024), kernel="slotted")  # the H100's bf16 layout


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_the_fitted_wide_row_layout_on_a_gpu(dtype):
    """1024x81920 strided rows (fp16's raced layout fits 3 of its 4 programs an SM there under Triton 3.6): on an
    H200 the dispatch launches the layout ``fitted`` takes for this Triton's registers; triton_tuned and the ops API
    through it match the float64 oracle, three calls each."""
    inp = _strided_inputs(1024, 81920, dtype, "cuda")
    x = inp["x"]
    if launching.fast_memory(x):
        cfg = tuned.choose_config(81920, 2, 1024, launching.sm_count(x), True, x.dtype == torch.float16, True)
        fitted = tuned.fitted(cfg, 1024, 81920, x.dtype)
        table = tuned._FAST_MEMORY_LAYOUTS["fp16" if dtype == "fp16" else "bf16 widest"]
        if dtype == "fp16":
            assert (fitted.block_n, fitted.num_warps) in {(lay.chunk, lay.warps) for lay in table}, fitted
        else:  # bf16's own layout at this width: nothing to fit
            assert fitted == cfg and (cfg.block_n, cfg.num_warps) == (4096, 4), cfg
    for _ in range(3):
        _check(*FAM.providers["triton_tuned"].fn(**inp), inp, dtype)
        _check(*ops.fused_add_rms_norm(inp["x"], inp["residual"], inp["weight"], inp["eps"]), inp, dtype)

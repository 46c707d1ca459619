"""A form of kasmina's telemetry kernel raced by ``kasmina_copy.py --tma``, not shipped: its x and y tiles moved by
the Tensor Memory Accelerator (Hopper's TMA). On an H200 its fastest tile was 2.2-3.3% faster than the shipped kernel
at three of eight bf16 points and 1.4-26.8% slower at the other five (``results/kasmina-copy/h200-tma-2f91ca2/``).

Each program walks one seed's rows, as ``branch_free``'s kernel does, but a tile of x arrives in shared memory by
one TMA copy, several tiles ahead (the loop's ``STAGES``), and y leaves the same way; the blend is folded into the
blueprint (``y = x @ (coef W + (1 - coef) I) + coef b``), so x is never needed outside the product's operand. What is
left for the threads is the product, the statistics and y's conversion: no address arithmetic, no masks, no copy
of x in the product's layout. Dormant seeds stay bit for bit x in 16-bit (a product by I in fp32).

It covers the shapes a descriptor can address with whole tiles (``fits``): 16-bit x, channels a power of two of
16 to 128, the rows a multiple of the tile, a program per seed (as many seeds as SMs)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.kasmina import branch_free
from kprof.kernels.kasmina.family import check_inputs
from kprof.kernels.lib import launching


@triton.jit
def _kasmina_tma_kernel(
    # descriptors: x [rows, S*C] and y (the same shape), blocks [BLOCK_B, BLOCK_C]
    x_desc,
    y_desc,
    # the seeds' state and blueprints
    lifecycle_ptr,  # [S] int8: 0 dormant, 1 active, 2 grafting
    blueprint_id_ptr,  # [S] int32
    alpha_ptr,  # [S] float32
    w_ptr,  # [NB, C, C] blueprint weights, contiguous
    b_ptr,  # [NB, C] blueprint biases, contiguous
    telemetry_ptr,  # [S, 2] float32 (mean, variance)
    # sizes
    n_rows,  # a multiple of BLOCK_B
    NB,  # blueprints in the registry: ids outside [0, NB) are flagged, never read
    # meta-parameters
    BLOCK_B: tl.constexpr,  # rows per tile
    BLOCK_C: tl.constexpr,  # the channels C: a power of two, 16 to 128
    STAGES: tl.constexpr,  # x tiles in flight (the row loop's pipeline)
    PRECISION: tl.constexpr,  # branch_free.precision_of's: 0 on a GPU, 1 (IEEE fp32) under the interpreter
    PER_TILE: tl.constexpr,  # the statistics' sums per column, reduced each tile (else per element, reduced once)
):
    seed = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    # the seed's state as branch_free's kernel reads it (clamp-and-flag included)
    lifecycle = tl.load(lifecycle_ptr + seed).to(tl.int32)
    bid = tl.load(blueprint_id_ptr + seed).to(tl.int64)
    valid = (bid >= 0) & (bid < NB)
    bid = tl.where(valid, bid, 0)
    coef = tl.where(lifecycle == 1, 1.0, tl.where(lifecycle == 2, tl.load(alpha_ptr + seed), 0.0))
    coef = tl.where(valid, coef, float("nan"))
    w = tl.load(w_ptr + bid * BLOCK_C * BLOCK_C + cols[:, None] * BLOCK_C + cols[None, :])
    folded = branch_free._fold(w, cols, cols, coef)
    fb = coef * tl.load(b_ptr + bid * BLOCK_C + cols).to(tl.float32)
    col0 = seed * BLOCK_C
    # the first tile before the loop: its first row of y is the shift of the sums (see branch_free._walk)
    y = _tile(x_desc, y_desc, 0, col0, folded, fb, PRECISION)
    rows = tl.arange(0, BLOCK_B)
    shift = tl.sum(tl.where(rows[:, None] == 0, y, 0.0), axis=0)
    d = y - shift[None, :]
    if PER_TILE:  # sums per column, each tile's rows reduced as it comes
        s1 = tl.sum(d, axis=0)
        s2 = tl.sum(d * d, axis=0)
    else:  # sums per element of the tile, reduced over rows once, after the walk
        s1 = d
        s2 = d * d
    for start in tl.range(BLOCK_B, n_rows, BLOCK_B, num_stages=STAGES):
        d = _tile(x_desc, y_desc, start, col0, folded, fb, PRECISION) - shift[None, :]
        if PER_TILE:
            s1 += tl.sum(d, axis=0)
            s2 += tl.sum(d * d, axis=0)
        else:
            s1 += d
            s2 += d * d
    if not PER_TILE:
        s1 = tl.sum(s1, axis=0)
        s2 = tl.sum(s2, axis=0)
    n = n_rows.to(tl.float32)
    mean = shift + s1 / n
    m2 = tl.maximum(s2 - s1 * s1 / n, 0.0)
    every = tl.full([BLOCK_C], True, tl.int1)
    branch_free._store_telemetry(telemetry_ptr, seed, tl.zeros([BLOCK_C], dtype=tl.float32) + n, mean, m2, every)


@triton.jit
def _tile(x_desc, y_desc, start, col0, folded, fb, PRECISION: tl.constexpr):
    """One tile of y (stored), from x's tile at row ``start``, columns ``col0``: returned in fp32."""
    x = x_desc.load([start, col0])
    y = branch_free._product(x, folded, tl.zeros([x.shape[0], x.shape[1]], dtype=tl.float32), PRECISION) + fb[None, :]
    y_desc.store([start, col0], y.to(y_desc.dtype))
    return y


# (rows per tile, warps, stages) where nothing else is said
DEFAULT_TILE = (64, 4, 3)


def fits(x: torch.Tensor, n_seeds: int, c: int, block_b: int, sms: int) -> bool:
    """Whether the TMA kernel covers ``x`` (rows of ``n_seeds`` x ``c`` channels) in tiles of ``block_b`` rows: 16-bit x
    a descriptor can address, channels a power of two of 16 to 128, whole tiles, a program per seed on ``sms`` SMs."""
    x2d = x.reshape(-1, x.shape[-1])
    n_rows = x2d.shape[0]
    return (
        launching.tma_ready(x2d)
        and c in (16, 32, 64, 128)
        and n_rows >= block_b
        and n_rows % block_b == 0
        and n_seeds >= sms
    )


def launch(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    block_b: int = DEFAULT_TILE[0],
    num_warps: int = DEFAULT_TILE[1],
    stages: int = DEFAULT_TILE[2],
    per_tile: bool = False,
    maxnreg: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Check, allocate and launch; returns ``(y, telemetry)``. Raises where :func:`fits` does not hold for the
    tile (ignoring the seeds per SM, which only decide whether it is the fastest launch)."""
    n_seeds, c = check_inputs(x, lifecycle, blueprint_id, alpha, weights, bias)
    x2d = x.reshape(-1, x.shape[-1])
    if not fits(x2d, n_seeds, c, block_b, 0):
        raise ValueError(
            f"kasmina TMA kernel: needs 16-bit x with 16-byte aligned rows, channels in 16, 32, 64 or 128 (got {c}) "
            f"and rows a multiple of the tile's {block_b} (got {x2d.shape[0]}); use branch_free.launch elsewhere"
        )
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    tele = torch.empty((n_seeds, 2), dtype=torch.float32, device=x.device)
    desc = launching.TensorDescriptor.from_tensor
    _kasmina_tma_kernel[(n_seeds,)](
        desc(x2d, [block_b, c]),
        desc(y.view(-1, y.shape[-1]), [block_b, c]),
        lifecycle,
        blueprint_id,
        alpha,
        weights.contiguous(),
        bias.contiguous(),
        tele,
        x2d.shape[0],
        weights.shape[0],
        BLOCK_B=block_b,
        BLOCK_C=c,
        STAGES=stages,
        PRECISION=branch_free.precision_of(x.dtype),
        PER_TILE=per_tile,
        num_warps=num_warps,
        **({"maxnreg": maxnreg} if maxnreg else {}),
    )
    return y, tele


def main() -> None:
    """Check the kernel against the float64 oracle at the shapes given (rows x seeds x channels), each tile."""
    import argparse

    from kprof.kernels import discover

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--shapes", default="64x1000x64,512x1000x32")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--tiles", default="32x2x3,64x4x3", help="rows x warps x stages")
    args = ap.parse_args()
    fam = discover()["kasmina"]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for dtype in args.dtypes.split(","):
        for s in args.shapes.split(","):
            inp = fam.make_inputs(tuple(int(v) for v in s.split("x")), dtype, device, 0)
            y_ref, t_ref = fam.oracle(**inp)
            for tile in args.tiles.split(","):
                b, w, st = (int(v) for v in tile.split("x"))
                y, t = launch(**inp, block_b=b, num_warps=w, stages=st)
                err_y = ((y.double() - y_ref).norm() / y_ref.norm()).item()
                err_t = ((t.double() - t_ref).norm() / t_ref.norm()).item()
                print(f"{dtype} {s} b{b} w{w} st{st}: relative error y {err_y:.2e}, telemetry {err_t:.2e}")


if __name__ == "__main__":
    main()

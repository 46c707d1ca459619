"""nsys stats reports name a copy's direction in one of two spellings: `[CUDA memcpy Host-to-Device]` (today's) or the
short `[CUDA memcpy HtoD]` (nvprof's). A copy whose direction is not read counts as none of the host<->device copies
kprof's metrics look for, so a run's transfers would read as absent."""

from __future__ import annotations

import csv
import io

import pytest

from kprof.profilers import nsys


def _gpu_trace_with_copies(data_file, names: list[str]) -> str:
    """The committed cuda_gpu_trace report with its first kernel row followed by one copy row per name (the same
    columns, grid and block emptied, 1 MB moved), as the report prints copies."""
    rows = list(csv.reader(data_file("nsys_rmsnorm_cuda_gpu_trace.csv").read_text().splitlines()))
    header, kernel = rows[0], rows[1]
    at = {c: i for i, c in enumerate(header)}
    out = [header, kernel]
    for i, name in enumerate(names):
        row = list(kernel)
        for c in ("GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", "Reg/Trd"):
            row[at[c]] = ""
        row[at["Start (ns)"]] = str(int(kernel[at["Start (ns)"]]) + 10_000 * (i + 1))
        row[at["Bytes (MB)"]] = "1.000"
        row[at["Name"]] = name
        out.append(row)
    buf = io.StringIO()
    csv.writer(buf).writerows(out)
    return buf.getvalue()


@pytest.mark.parametrize(
    "name, kind",
    [
        ("[CUDA memcpy Host-to-Device]", "HtoD"),
        ("[CUDA memcpy HtoD]", "HtoD"),
        ("[CUDA memcpy Device-to-Host]", "DtoH"),
        ("[CUDA memcpy DtoH]", "DtoH"),
        ("[CUDA memcpy DtoD]", "DtoD"),
    ],
)
def test_a_copys_direction_is_read_in_either_spelling(data_file, tmp_path, name, kind):
    path = tmp_path / "report_cuda_gpu_trace.csv"
    path.write_text(_gpu_trace_with_copies(data_file, [name]))
    t = nsys.parse_stats(path)
    copies = t[t["kind"] == "memcpy"]
    assert copies["kernel"].tolist() == [name]
    assert copies["copy_kind"].tolist() == [kind]
    assert copies["bytes"].tolist() == [1_000_000]
    assert (t["kind"] == "kernel").sum() == 1

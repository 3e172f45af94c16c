"""Does the harness's L2 flush slow the timed launch? A read-only kernel timed after each way of flushing the L2.

    python bench/l2_flush_probe.py OUT_DIR          (one GPU, CuPy; about 20 s)

The harness (templates/s2s_harness_common.cuh, prepare_timed) flushes the L2 before every timed launch with a
cudaMemset of twice the L2's size: the L2 is then full of dirty lines, and a kernel that reads more than the L2 holds
evicts them, so their write-back (about one L2 of bytes, 50-60 MB on an H100/H200) shares DRAM with the timed
kernel. Every 64 MB read-only zoo kernel measured 26-27 µs (gemv_rows, row_sums, reduce_atomic; 58-60% of the copy
floor of 15.9 µs), about what 64 MB plus one L2 of write-back at the copy bandwidth takes. Here one grid-stride
float4 sum over N bytes is timed (CUDA events around the launch alone, median of `REPS`) after: no flush; the
memset (as the harness does); the memset followed by a read of the flush buffer (the L2 left holding clean lines);
a read alone. Output: OUT/l2_flush_probe.{json,md}: per size and flush, the median µs, GB/s and the fraction of the
measured copy bandwidth (cudaMemcpy device to device of 1 GiB, bench/zoo_vendor.py). If "memset" is much slower
than "memset+read", the harness's flush should read its buffer after writing it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import commit, write_result  # noqa: E402

FLUSHES = ("none", "memset", "memset+read", "read")
SIZES_MB = (64, 128, 256)
REPS = 30
SOURCE = r"""
extern "C" __global__ void read_sum(const float4* __restrict__ a, long long n4, float* out)
{
    float s = 0.0f;
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += step) {
        float4 v = a[i];
        s += v.x + v.y + v.z + v.w;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def summarize(rows: list[dict[str, Any]], copy_gbs: float | None) -> list[dict[str, Any]]:
    """Each row ({mb, flush, median_us}) with its GB/s (bytes read / median time) and fraction of the copy bandwidth."""
    out = []
    for r in rows:
        gbs = r["mb"] * (1 << 20) / (r["median_us"] * 1e3) if r.get("median_us") else None
        out.append({**r, "gbs": gbs, "fraction_of_copy": gbs / copy_gbs if gbs and copy_gbs else None})
    return out


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# L2 flush probe ({doc['device']}, commit {doc['commit']})", "",
             f"Copy bandwidth {doc['copy_gbs']:.0f} GB/s (1 GiB device to device, read + written)." if doc.get("copy_gbs") else
             "Copy bandwidth: not measured.", "A grid-stride float4 sum of N MB, timed alone after each flush (median of "
             f"{REPS}); the harness flushes with the memset ({doc['flush_mb']} MB).", "",
             "| MB read | flush | median µs | GB/s | of copy |", "|---|---|---|---|---|"]
    for r in doc["rows"]:
        gbs, frac = r.get("gbs"), r.get("fraction_of_copy")
        lines.append(f"| {r['mb']} | {r['flush']} | {r['median_us']:.1f} | {gbs:.0f} | {frac:.0%} |" if gbs and frac else
                     f"| {r['mb']} | {r['flush']} | {r.get('median_us', '-')} | - | - |")
    return "\n".join(lines) + "\n"


def measure() -> dict[str, Any]:
    import cupy as cp
    from zoo_vendor import copy_bandwidth_gbs

    copy = copy_bandwidth_gbs()
    props = cp.cuda.runtime.getDeviceProperties(0)
    l2, sms = int(props["l2CacheSize"]), int(props["multiProcessorCount"])
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    kernel = cp.RawKernel(SOURCE, "read_sum")
    block, grid = 256, sms * 8
    out = cp.zeros(block * grid, dtype=cp.float32)
    flush_bytes = 2 * l2
    flush = cp.zeros(flush_bytes // 4, dtype=cp.float32)
    stream = cp.cuda.get_current_stream()

    def read(buf: Any) -> None:
        kernel((grid,), (block,), (buf, cp.int64(buf.size // 4), out))

    def do_flush(how: str) -> None:
        if how in {"memset", "memset+read"}:
            cp.cuda.runtime.memsetAsync(flush.data.ptr, 0x5A, flush_bytes, stream.ptr)
        if how in {"memset+read", "read"}:
            read(flush)

    rows = []
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    for mb in SIZES_MB:
        data = cp.ones(mb * (1 << 20) // 4, dtype=cp.float32)
        for how in FLUSHES:
            times = []
            for rep in range(REPS + 3):
                do_flush(how)
                e0.record(stream)
                read(data)
                e1.record(stream)
                e1.synchronize()
                if rep >= 3:  # warm-up
                    times.append(cp.cuda.get_elapsed_time(e0, e1) * 1e3)
            times.sort()
            rows.append({"mb": mb, "flush": how, "median_us": times[len(times) // 2],
                         "spread_us": times[(3 * len(times)) // 4] - times[len(times) // 4]})
        data = None
        cp.get_default_memory_pool().free_all_blocks()
    return {"device": name, "l2_bytes": l2, "flush_mb": flush_bytes >> 20, "copy": copy, "copy_gbs": copy.get("gbs"),
            "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    doc = measure()
    doc["rows"] = summarize(doc["rows"], doc.get("copy_gbs"))
    doc["commit"] = commit()
    write_result(args.out, "l2_flush_probe", doc, markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())

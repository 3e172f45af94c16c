"""grid-stride-fill{vec=N} and shared-histogram{copies=N} (issue 15: histo_shared at 14% and histo_global at 41% of
the copy bandwidth on the H200). Threaded on the CPU against the original (tests/emulate_cuda_block.py): odd sizes,
buffers on and off a 16-byte boundary (the word loop and the scalar fallback), a grid smaller than the data; broken
variants are caught; the rewritten zoo kernels compile with nvcc -arch=sm_90."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs

from s2s.lang.edits import Refused
from s2s.optimize.registry import Applied, build_pipeline, make_pass, run_pass

ZOO = ROOT / "bench" / "zoo"
HISTO_SHARED = (ZOO / "histo_shared" / "histo_shared.cu").read_text()
HISTO_GLOBAL = (ZOO / "histo_global" / "histo_global.cu").read_text()
# histo_global's kernel with bins spread over the fill's values (0..142): every bin and both clamps are reached
FLOAT_BINS = HISTO_GLOBAL.replace("(int)(v[i] * BINS)", "(int)(v[i] * 1.79f) - 1")


def _apply(pipeline: str, source: bytes, kernel: str) -> Applied:
    out = None
    for p in build_pipeline(pipeline):
        out = run_pass(p, source, "cuda", kernel)
        assert isinstance(out, Applied), (pipeline, out)
        source = out.text
    assert out is not None
    return out


def test_byte_histogram_gets_16_byte_words_and_32_copies() -> None:
    """histo_shared: one uint4 per thread per iteration unpacked into 16 adds, each into the lane's copy of the bin;
    the flush sums the copies; the grid fills the device."""
    out = _apply("grid-stride-fill{vec=16},shared-histogram{copies=32}", HISTO_SHARED.encode(), "histo_shared")
    text = out.text.decode()
    assert "union { uint4 w; unsigned char e[16]; } data_v;" in text
    assert "data_v.w = reinterpret_cast<const uint4*>(data)[q];" in text
    assert "const int nv = ((reinterpret_cast<unsigned long long>(data) & 15) == 0) ? (n) / 16 : 0;" in text
    assert "atomicAdd(&local[(data_v.e[j] % NBINS) * 32 + local_cp], 1);" in text
    assert "for (int i = nv * 16 + blockIdx.x * blockDim.x + threadIdx.x; i < (n);" in text  # the scalar tail
    assert "__shared__ int local[(NBINS) * 32];" in text and "atomicAdd(&bins[b], local_sum(b));" in text
    assert out.launch is None  # the second pass keeps the grid-stride-fill's launch (checked on its own below)
    first = _apply("grid-stride-fill{vec=16}", HISTO_SHARED.encode(), "histo_shared")
    assert first.launch is not None and first.launch.grid_from.startswith("extent:")


def test_float_loop_gets_float_quads_on_a_grid_that_fills_the_device() -> None:
    """histo_global already loops grid-stride: vec=16 takes 4 floats per load there, and its 2048 blocks (each
    clearing and flushing its histogram) become the 1056 that fill the device (any grid covers the loop)."""
    out = _apply("shared-histogram{copies=32},grid-stride-fill{vec=16}", HISTO_GLOBAL.encode(), "histo_global")
    text = out.text.decode()
    assert "union { uint4 w; float e[4]; } v_v;" in text and "(int)(v_v.e[j] * BINS)" in text
    assert "__shared__ unsigned int hist_s[((BINS < 1024 ? BINS : 1024) * 32)];" in text
    assert "atomicAdd(&hist_s[bin * 32 + cp], 1u)" in text
    assert out.launch is not None and out.launch.resolve((2048, 1, 1), (256, 1, 1)) == ((1056, 1, 1), (256, 1, 1))


def test_a_looped_kernel_with_per_block_results_keeps_its_grid() -> None:
    src = b"""__global__ void per_block(const unsigned char* d, int* bins, int n)
{
    __shared__ int h[16];
    if (threadIdx.x < 16) h[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&h[d[i] & 15], 1);
    __syncthreads();
    if (threadIdx.x < 16) bins[blockIdx.x * 16 + threadIdx.x] = h[threadIdx.x];
}
"""
    out = _apply("grid-stride-fill{vec=16}", src, "per_block")
    assert out.launch is None and "uint4" in out.text.decode()


@pytest.mark.parametrize(("pipeline", "source", "kernel", "why"), [
    ("grid-stride-fill", HISTO_GLOBAL, "histo_global", "already a grid-stride loop"),
    ("grid-stride-fill{vec=4}", HISTO_GLOBAL, "histo_global", "holds one 4-byte element"),
    ("grid-stride-fill{vec=12}", HISTO_SHARED, "histo_shared", "must be 4, 8 or 16"),
    ("shared-histogram{copies=3}", HISTO_GLOBAL, "histo_global", "a power of two"),
    ("grid-stride-fill{words=2}", HISTO_SHARED, "histo_shared", "with vec=N"),
    ("grid-stride-fill{vec=16}", (ZOO / "reduce_atomic" / "reduce_atomic.cu").read_text(), "reduce_atomic",
     "every element adds into one global address"),
    ("grid-stride-fill{vec=16 words=3}", HISTO_SHARED, "histo_shared", "1, 2 or 4 words"),
    ("shared-histogram", HISTO_SHARED, "histo_shared", "copies=N spreads a shared histogram"),
    ("shared-histogram{copies=32 max_bins=1024}",
     HISTO_GLOBAL.replace("unsigned int* hist, int n)", "unsigned int* hist, int n, int nbins)"), "histo_global", "exceed 48 KiB"),
    ("shared-histogram{copies=4}", HISTO_SHARED.replace("atomicAdd(&local[data[i] % NBINS], 1);", "local[data[i] % NBINS] += 1;"),
     "histo_shared", "only `local[i] = v;` stores and atomicAdd updates spread"),
])
def test_refusals_say_why(pipeline: str, source: str, kernel: str, why: str) -> None:
    source_b, out = source.encode(), None
    for p in build_pipeline(pipeline):
        out = run_pass(p, source_b, "cuda", kernel)
    assert isinstance(out, Refused) and why in out.reason, out


def test_vec_is_refused_on_opencl() -> None:
    src = b"__kernel void h(__global const uchar* d, __global int* b, int n) { __local int l[64]; int i = get_global_id(0); if (i < n) atomic_add(&l[d[i] % 64], 1); }"
    out = run_pass(make_pass("grid-stride-fill", {"vec": "16"}), src, "opencl", "h")
    assert isinstance(out, Refused) and "CUDA/HIP only" in out.reason


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize(("copies", "words"), [(32, 1), (8, 1), (32, 4), (16, 2)])
def test_byte_histogram_counts_every_byte(tmp_path: Path, offset: int, copies: int, words: int) -> None:
    """5003 bytes (312 whole words and a tail of 11; off a 16-byte boundary all of them go through the scalar loop)
    on 3 blocks of 64 threads against the original's 20 blocks of 256: the same 64 counts (with 2 or 4 words per
    thread, 312 words are 1.6 or 0.8 rounds of 192 threads: partial rounds); a tail that skips its first word, or a
    flush that reads half the copies, is caught."""
    src = HISTO_SHARED.replace("#define N (1 << 26)", "#define N 5003").encode()
    out = _apply(f"grid-stride-fill{{vec=16 words={words}}},shared-histogram{{copies={copies}}}", src, "histo_shared")
    launches = (Launch((20, 1, 1), (256, 1, 1)), Launch((3, 1, 1), (64, 1, 1)))
    counts, scalars = {"data": 5003, "bins": 64}, {"n": "5003"}
    assert same_outputs(tmp_path, "histo_shared", src, out.text, launches, counts, scalars, offset=offset) == "SAME"
    broken = [out.text.replace(f"local_c < {copies};".encode(), f"local_c < {copies // 2};".encode(), 1)]
    if offset == 0:
        broken.append(out.text.replace(b"i = nv * 16 + blockIdx", b"i = nv * 16 + 16 + blockIdx"))
    for b in broken:
        assert b != out.text
        assert same_outputs(tmp_path, "histo_shared", src, b, launches, counts, scalars, offset=offset) != "SAME"


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1, 2])
@pytest.mark.parametrize("words", [1, 4])
def test_float_histogram_counts_every_value(tmp_path: Path, offset: int, words: int) -> None:
    """4099 floats into 256 bins through 16 copies and float quads (offsets 1 and 2: off the 16-byte boundary)."""
    src = FLOAT_BINS.replace("#define N (1 << 25)", "#define N 4099").encode()
    out = _apply(f"shared-histogram{{copies=16}},grid-stride-fill{{vec=16 words={words}}}", src, "histo_global")
    launches = (Launch((5, 1, 1), (128, 1, 1)), Launch((3, 1, 1), (96, 1, 1)))
    counts, scalars = {"v": 4099, "hist": 256}, {"n": "4099"}
    assert same_outputs(tmp_path, "histo_global", src, out.text, launches, counts, scalars, offset=offset) == "SAME"
    word = b"v_v.e[j]" if words == 1 else b"v_v[u].e[j]"
    broken = out.text.replace(b"(int)(" + word + b" * 1.79f)", b"(int)(" + word.replace(b"[j]", b"[0]") + b" * 1.79f)")  # a word's first value 4 times
    wrong = same_outputs(tmp_path, "histo_global", src, broken, launches, counts, scalars, offset=offset) != "SAME"
    assert broken != out.text and wrong == (offset == 0)  # off the boundary no word is loaded: the scalar loop counts


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_rewritten_zoo_histograms_compile_for_sm90(tmp_path: Path) -> None:
    """The plan's forms (bench/plans/zoo_histo.toml) of both zoo histograms, nvcc -arch=sm_90 -c, with no local memory."""
    forms = [("histo_shared", HISTO_SHARED, "grid-stride-fill{vec=16},shared-histogram{copies=32}"),
             ("histo_shared", HISTO_SHARED, "grid-stride-fill{vec=16},shared-histogram{copies=8}"),
             ("histo_global", HISTO_GLOBAL, "shared-histogram{copies=32},grid-stride-fill{vec=16}"),
             ("histo_global", HISTO_GLOBAL, "shared-histogram{copies=16},grid-stride-fill{vec=16}"),
             ("histo_shared", HISTO_SHARED, "grid-stride-fill{vec=16 words=4},shared-histogram{copies=32}"),
             ("histo_global", HISTO_GLOBAL, "shared-histogram{copies=16},grid-stride-fill{vec=16 words=4}")]
    shutil.copy(ZOO / "zoo.h", tmp_path / "zoo.h")
    files = []
    for i, (kernel, source, pipeline) in enumerate(forms):
        (tmp_path / "k").mkdir(exist_ok=True)
        files.append(tmp_path / "k" / f"{kernel}_{i}.cu")
        files[-1].write_bytes(_apply(pipeline, source.encode(), kernel).text)
    for f in files:
        # -cubin: ptxas's counts of the device code as -c builds it; only the host compiler is not run (session_builds.device_only)
        proc = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", str(f), "-o", str(f.with_suffix(".o"))],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "0 bytes stack frame" in proc.stderr, proc.stderr[-2000:]


def _golden_input(name: str) -> bytes:
    text = (ROOT / "tests" / "golden" / "passes" / name).read_text()
    return text.split("// ----- INPUT\n", 1)[1].split("// ----- EXPECTED\n", 1)[0].encode()


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1])
def test_two_arrays_of_two_sizes_take_one_run_each(tmp_path: Path, offset: int) -> None:
    """short keys (8-byte words) beside float weights (16-byte words): runs of 4 elements, 1001 of them (a tail of 1);
    float sums in another order, within rounding."""
    src = _golden_input("grid_stride_fill_vec16_two_arrays.cu")
    out = _apply("grid-stride-fill{vec=16}", src, "short_histo")
    launches = (Launch((8, 1, 1), (128, 1, 1)), Launch((2, 1, 1), (64, 1, 1)))
    counts, scalars = {"keys": 1001, "w": 1001, "out": 32}, {"n": "1001"}
    assert same_outputs(tmp_path, "short_histo", src, out.text, launches, counts, scalars, rtol=1e-5, offset=offset) == "SAME"


@pytest.mark.slow
def test_spread_copies_keep_a_seeded_bin(tmp_path: Path) -> None:
    """A shared histogram whose bin 0 starts at 1 (a store of a non-zero value): the copies hold it once, not 16 times."""
    src = _golden_input("shared_histogram_copies_spread_seeded.cu")
    out = _apply("shared-histogram{copies=16}", src, "histo_seeded")
    launches = (Launch((4, 1, 1), (100, 1, 1)), Launch((4, 1, 1), (100, 1, 1)))
    counts, scalars = {"data": 377, "bins": 64}, {"n": "377"}
    assert same_outputs(tmp_path, "histo_seeded", src, out.text, launches, counts, scalars) == "SAME"
    broken = out.text.replace(b"local_c == 0 ? local_v : (int)0", b"local_v")
    assert broken != out.text and same_outputs(tmp_path, "histo_seeded", src, broken, launches, counts, scalars) != "SAME"


def test_cost_model_ranks_the_word_forms_ahead_of_the_original() -> None:
    """The model cannot read the words (reinterpret_cast) but counts the scalar tail `for (i = nv * 16 + GID; ...)` as
    coalesced, and the global fallback of an out-of-range bin (`else atomicAdd(&hist[bin], ..)`) as the shared add it
    stands in for: the histograms' word forms come before the forms that keep 32M scattered global atomics."""
    from s2s.optimize.cost import predict

    n = float(1 << 25)
    original = predict(HISTO_GLOBAL.encode(), "cuda", "histo_global", (2048, 1, 1), (256, 1, 1), {"n": n})
    out = _apply("shared-histogram{copies=16},grid-stride-fill{vec=16 words=4}", HISTO_GLOBAL.encode(), "histo_global")
    words = predict(out.text, "cuda", "histo_global", (1056, 1, 1), (256, 1, 1), {"n": n})
    assert original is not None and words is not None
    assert words.dram_bytes < 0.15 * original.dram_bytes and words.seconds < 0.2 * original.seconds
    assert 4 * n <= words.dram_bytes < 5 * n  # the 128 MB of floats once, not a sector per element


def test_launch_config_takes_a_shared_histogram_whose_threads_only_stride_the_block() -> None:
    """The clear and flush loops `for (b = threadIdx.x; b < NBINS; b += blockDim.x)` cover the bins with any 1-D block
    (histo_shared on the H200: 1024-thread blocks 20.8 us, 256-thread 22.8, probe 2026-12-01); a shared array indexed
    by threadIdx itself keeps the refusal."""
    out = _apply("grid-stride-fill{vec=16 words=4},launch-config{block=1024},shared-histogram{copies=32}", HISTO_SHARED.encode(),
                 "histo_shared")
    assert out.launch is None or out.launch.block is None
    per_slot = HISTO_SHARED.replace("local[b] = 0;", "local[threadIdx.x] = 0;", 1).encode()
    refused = run_pass(make_pass("launch-config", {"block": "1024"}), per_slot, "cuda", "histo_shared")
    assert isinstance(refused, Refused) and "shared memory sized for the current block (threadIdx.x" in refused.reason


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1])
def test_byte_histogram_on_larger_blocks_counts_every_byte(tmp_path: Path, offset: int) -> None:
    """The same 5003 bytes on 2 blocks of 1024 (the launch launch-config{block=1024} gives a grid of 2048 threads) and
    on 1 block of 512 against the original's 20 blocks of 256."""
    src = HISTO_SHARED.replace("#define N (1 << 26)", "#define N 5003").encode()
    out = _apply("grid-stride-fill{vec=16 words=4},launch-config{block=1024},shared-histogram{copies=32}", src, "histo_shared")
    launches = (Launch((20, 1, 1), (256, 1, 1)), Launch((2, 1, 1), (1024, 1, 1)))
    counts, scalars = {"data": 5003, "bins": 64}, {"n": "5003"}
    assert same_outputs(tmp_path, "histo_shared", src, out.text, launches, counts, scalars, offset=offset) == "SAME"
    half = (Launch((20, 1, 1), (256, 1, 1)), Launch((1, 1, 1), (512, 1, 1)))
    assert same_outputs(tmp_path, "histo_shared", src, out.text, half, counts, scalars, offset=offset) == "SAME"


# -- a histogram whose length nothing in the kernel names (the keys index the counts directly) ---------------------
TALLY = """\
__global__ void tally(const int* keys, int* counts, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&counts[keys[i]], 1);
}
"""


def test_a_histogram_of_unnamed_length_privatizes_its_first_bins() -> None:
    """No parameter or constant names the length of `counts`: the first max_bins bins are counted in shared memory, a
    key past them goes to the global atomic as before (it used to be refused: 'the length of counts is not known')."""
    out = run_pass(make_pass("shared-histogram", {"max_bins": "256"}), TALLY.encode(), "cuda", "tally")
    assert isinstance(out, Applied), out
    text = out.text.decode()
    assert "__shared__ int hist_s[256];" in text and "const int nsh = 256;" in text
    assert "if (bin >= 0 && bin < nsh) atomicAdd(&hist_s[bin], 1); else atomicAdd(&counts[bin], 1);" in text
    too_big = run_pass(make_pass("shared-histogram", {"max_bins": "8192", "copies": "2"}), TALLY.encode(), "cuda", "tally")
    assert isinstance(too_big, Refused) and "48 KiB" in too_big.reason


@pytest.mark.parametrize("copies", [1, 4])
def test_a_histogram_of_unnamed_length_counts_the_same(tmp_path: Path, copies: int) -> None:
    """3001 keys over 700 counts (the fill's keys reach 0..96 and the test keeps them under 700) with 64 shared bins:
    the keys under 64 are counted in shared memory, the others globally; every count matches the original's, and a
    flush that drops the last shared bin is caught."""
    out = run_pass(make_pass("shared-histogram", {"max_bins": "64", "copies": str(copies)}), TALLY.encode(), "cuda", "tally")
    assert isinstance(out, Applied), out
    launches = (Launch((12, 1, 1), (256, 1, 1)), Launch((12, 1, 1), (256, 1, 1)))
    counts, scalars = {"keys": 3001, "counts": 700}, {"n": "3001"}
    assert same_outputs(tmp_path, "tally", TALLY.encode(), out.text, launches, counts, scalars) == "SAME"
    broken = out.text.replace(b"k < nsh; k += nthr)\n", b"k < nsh - 1; k += nthr)\n", 1)
    assert broken != out.text
    assert same_outputs(tmp_path, "tally", TALLY.encode(), broken, launches, counts, scalars) != "SAME"

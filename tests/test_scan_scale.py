"""Scan at scale: macro scope per translation unit, language from content, the cache, processes, pathological input."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from s2s.base.records import Index, Kernel, LaunchSite
from s2s.scan import tree as tree_mod
from s2s.scan.ranking import launches_of, static_estimate
from s2s.scan.tree import scan_tree

KERNEL = "__global__ void {name}(float* a, int n) {{ int i = threadIdx.x; if (i < n) a[i] *= 2.0f; }}\n"
LAUNCH = "void run_{name}(float* a, int n) {{ for (int t = 0; t < 3; ++t) {name}<<<1, 32>>>(a, n); }}\n"


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def age(root: Path) -> None:
    """Files older than the cache's racy window, as in a tree that was not just written."""
    old = time.time() - 3600
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))


def found(index: Index) -> tuple[list[tuple[str, str, str]], list[tuple[str, int, str]]]:
    return ([(k.file, k.qualified, k.language) for k in index.kernels],
            [(s.file, s.line, s.kernel) for s in index.launches])


# -- macro scope and language ---------------------------------------------------------------------

def test_kernel_macro_makes_kernels_only_where_its_definition_is_seen(tmp_path: Path) -> None:
    write(tmp_path, {
        "cuda/defs.h": "#pragma once\n#define GLOBAL __global__\n",
        "cuda/stencil.cu": '#include "defs.h"\nGLOBAL void stencil(float* a) { a[threadIdx.x] = 0.0f; }\n',
        # a header that uses the macro without including it: its unit (main.cu) includes defs.h first
        "cuda/body.cuh": "GLOBAL void body(float* a) { a[threadIdx.x] = 1.0f; }\n",
        "cuda/main.cu": '#include "defs.h"\n#include "body.cuh"\nint main() { return 0; }\n',
        # the OpenMP port of the same benchmark: its GLOBAL is its own (empty) macro, and it sees no other
        "omp/defs.h": "#pragma once\n#define GLOBAL\n",
        "omp/stencil.cpp": '#include "defs.h"\nGLOBAL void stencil(float* a) { a[0] = 0.0f; }\n',
        "sycl/stencil.cpp": "GLOBAL void stencil_sycl(float* a) { a[0] = 0.0f; }\n",
    })
    index = scan_tree(tmp_path, jobs=1)
    assert sorted((k.file, k.name, k.via_macro) for k in index.kernels) == [
        ("cuda/body.cuh", "body", "GLOBAL"), ("cuda/stencil.cu", "stencil", "GLOBAL")]


def test_kernel_macro_through_a_chain_in_an_angle_include_of_the_tree(tmp_path: Path) -> None:
    write(tmp_path, {
        "include/lib/config.h": "#define LIB_KERNEL_ATTRS __global__ __launch_bounds__(256)\n",
        "include/lib/kernels.h": "#include <lib/config.h>\n#define LIB_KERNEL LIB_KERNEL_ATTRS\n"
                                 "LIB_KERNEL void scale(float* a) { a[threadIdx.x] *= 2.0f; }\n",
        "other/port.cpp": "LIB_KERNEL void scale_cpu(float* a) { a[0] *= 2.0f; }\n",
    })
    index = scan_tree(tmp_path, jobs=1)
    assert [(k.file, k.name) for k in index.kernels] == [("include/lib/kernels.h", "scale")]


def test_language_from_the_content_and_the_unit(tmp_path: Path) -> None:
    write(tmp_path, {
        "hip/main.cu": "#include <hip/hip_runtime.h>\n" + KERNEL.format(name="hip_in_cu")
                       + "void go(float* a) { hipLaunchKernelGGL(hip_in_cu, dim3(1), dim3(32), 0, 0, a, 32); }\n",
        "hip/kernels.h": KERNEL.format(name="hip_header"),
        "hip/app.cpp": '#include <hip/hip_runtime.h>\n#include "kernels.h"\n',
        "cuda/kernels.cuh": KERNEL.format(name="cuda_header"),
        "cuda/app.cu": '#include <cuda_runtime.h>\n#include "kernels.cuh"\n',
        "plain/k.cu": KERNEL.format(name="plain_cuda"),
    })
    index = scan_tree(tmp_path, jobs=1)
    assert {k.name: k.language for k in index.kernels} == {
        "hip_in_cu": "hip", "hip_header": "hip", "cuda_header": "cuda", "plain_cuda": "cuda"}
    assert [(s.kernel, s.kind) for s in index.launches] == [("hip_in_cu", "hipLaunchKernelGGL")]


def test_prefilter_counts_files_it_did_not_parse(tmp_path: Path) -> None:
    write(tmp_path, {"k.cu": KERNEL.format(name="k"), "host.cpp": "int add(int a, int b) { return a + b; }\n",
                     "util.h": "#define N 4\n"})
    index = scan_tree(tmp_path, jobs=1)
    assert (index.extra["files"], index.extra["parsed"], index.extra["skipped"]) == ("3", "1", "2")
    assert [k.name for k in index.kernels] == ["k"]


# -- the cache -------------------------------------------------------------------------------------

def small_app(root: Path, n: int = 6) -> None:
    files = {f"src/m{i}/k{i}.cu": '#include "../common.h"\n' + KERNEL.format(name=f"k{i}") + LAUNCH.format(name=f"k{i}")
             for i in range(n)}
    files["src/common.h"] = "#pragma once\n#define BLOCK 256\n"
    files["src/host.cpp"] = "int main() { return 0; }\n"
    write(root, files)


def test_unchanged_files_are_never_parsed_again_and_an_edit_reparses_only_that_file(tmp_path: Path) -> None:
    app, cache = tmp_path / "app", tmp_path / "cache"
    small_app(app)
    age(app)
    cold = scan_tree(app, cache_dir=cache, jobs=1)
    assert (cold.extra["parsed"], cold.extra["cached"]) == ("6", "0")
    warm = scan_tree(app, cache_dir=cache, jobs=1)
    assert (warm.extra["parsed"], warm.extra["cached"]) == ("0", "6")
    assert found(warm) == found(cold) and warm.problems == cold.problems and warm.limits == cold.limits

    edited = app / "src/m3/k3.cu"
    edited.write_text(edited.read_text().replace("2.0f", "3.0f"))
    after = scan_tree(app, cache_dir=cache, jobs=1)
    assert (after.extra["parsed"], after.extra["cached"]) == ("1", "5")
    fresh = scan_tree(app, jobs=1)
    assert after.kernels == fresh.kernels and after.launches == fresh.launches
    assert next(k for k in after.kernels if k.name == "k3").sha256 != next(k for k in cold.kernels if k.name == "k3").sha256


def test_unchanged_tree_reads_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app, cache = tmp_path / "app", tmp_path / "cache"
    small_app(app)
    age(app)
    scan_tree(app, cache_dir=cache, jobs=1)
    read: list[str] = []
    real = tree_mod.prepare
    monkeypatch.setattr(tree_mod, "prepare", lambda rel, path: read.append(rel) or real(rel, path))
    warm = scan_tree(app, cache_dir=cache, jobs=1)
    assert read == [] and len(warm.kernels) == 6 and warm.lines_scanned > 0


def test_header_defining_a_kernel_macro_invalidates_only_its_dependents(tmp_path: Path) -> None:
    app, cache = tmp_path / "app", tmp_path / "cache"
    write(app, {
        "a/defs.h": "#define KERN __global__\n",
        "a/k.cu": '#include "defs.h"\nKERN void ka(float* a) { a[0] = 1.0f; }\n',
        "b/k.cu": KERNEL.format(name="kb"),
    })
    age(app)
    assert [k.name for k in scan_tree(app, cache_dir=cache, jobs=1).kernels] == ["ka", "kb"]
    (app / "a/defs.h").write_text("#define KERN static\n")
    again = scan_tree(app, cache_dir=cache, jobs=1)
    assert [k.name for k in again.kernels] == ["kb"]
    assert again.extra["cached"] == "1"  # b/k.cu: untouched by the macro


@pytest.mark.parametrize("damage", [b"", b"garbage", b"\x80\x05\x95junk"])
def test_damaged_cache_is_one_warning_and_a_full_rescan(tmp_path: Path, damage: bytes) -> None:
    app, cache = tmp_path / "app", tmp_path / "cache"
    small_app(app)
    age(app)
    cold = scan_tree(app, cache_dir=cache, jobs=1)
    files = sorted((cache / "scan").iterdir())
    assert [f.suffix for f in files] == [".index", ".preambles"]
    for f in files:
        f.write_bytes(damage)
    again = scan_tree(app, cache_dir=cache, jobs=1)
    assert found(again) == found(cold)
    assert again.extra["parsed"] == "6"
    assert "damaged" in again.extra["warning"] and "\n" not in again.extra["warning"]
    assert scan_tree(app, cache_dir=cache, jobs=1).extra["cached"] == "6"  # written afresh


def test_cli_damaged_cache_warns_in_one_line_without_traceback(tmp_path: Path) -> None:
    app, cache = tmp_path / "app", tmp_path / "cache"
    small_app(app)
    env = {**os.environ, "S2S_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "s2s", "scan", str(app), "--json"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    for f in (cache / "scan").iterdir():
        f.write_bytes(b"not a pickle")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0
    assert "Traceback" not in res.stderr
    warnings = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("warning") and "damaged" in warnings[0]
    doc = json.loads(res.stdout)
    assert len(doc["kernels"]) == 6 and doc["stats"]["parsed"] == 6
    none = subprocess.run(cmd + ["--no-cache"], capture_output=True, text=True, env=env, timeout=120)
    assert json.loads(none.stdout)["stats"]["cached"] == 0


@pytest.mark.slow
def test_same_answer_with_and_without_cache_and_with_one_or_two_processes(tmp_path: Path) -> None:
    app, cache = tmp_path / "app", tmp_path / "cache"
    files = {}
    for i in range(60):
        files[f"d{i % 7}/k{i}.cu"] = ('#include "../lib/defs.h"\n' + KERNEL.format(name=f"k{i}")
                                      + f"KERNEL_ATTR void m{i}(float* a) {{ a[0] = {i}.0f; }}\n"
                                      + LAUNCH.format(name=f"k{i}") + "// padding\n" * 400)
        files[f"d{i % 7}/host{i}.cpp"] = "int f(int x) { return x * 2; }\n" * 300
    files["lib/defs.h"] = "#define KERNEL_ATTR __global__\n"
    write(app, files)
    age(app)
    one = scan_tree(app, jobs=1)
    two = scan_tree(app, jobs=2)
    cold = scan_tree(app, jobs=2, cache_dir=cache)
    warm = scan_tree(app, jobs=2, cache_dir=cache)
    assert len(one.kernels) == 120 and len(one.launches) == 60
    for other in (two, cold, warm):
        assert other.kernels == one.kernels and other.launches == one.launches
        assert other.problems == one.problems and other.limits == one.limits
    # 60 kernel files and lib/defs.h (it spells the kernel macro) came from the cache; the 60 host files never had
    # to be parsed at all
    assert (warm.extra["parsed"], warm.extra["cached"], warm.extra["skipped"]) == ("0", "61", "60")


# -- linear cost and pathological input ------------------------------------------------------------

def test_static_ranking_pairs_kernels_and_launches_by_name() -> None:
    n = 20000
    kernels = tuple(Kernel(name=f"k{i}", qualified=f"ns::k{i}", file="a.cu", line=i + 1, language="cuda", params=())
                    for i in range(n))
    launches = tuple(LaunchSite(kernel=f"ns::k{i}" if i % 2 else f"k{i}", file="b.cu", line=i + 1, kind="chevron",
                                grid="1", block="1", loop_depth=i % 3) for i in range(n))
    index = Index(root="/t", kernels=kernels, launches=launches + (LaunchSite("other::k5", "c.cu", 1, "chevron", "1", "1"),))
    start = time.perf_counter()
    spots = static_estimate(index)
    assert time.perf_counter() - start < 5
    by_kernel = {h.kernel.name: h for h in spots}
    for i in (0, 1, 5, 19999):
        assert by_kernel[f"k{i}"].calls == len(launches_of(index, kernels[i])) == 1
    assert by_kernel["k2"].score == 100.0  # one launch at loop depth 2


def _scan_in_child(tree: Path) -> dict[str, object]:
    """Scan in a fresh process: its peak memory is its own."""
    code = (
        "import json, resource, sys, time\n"
        "from s2s.scan.tree import scan_tree\n"
        "t = time.perf_counter()\n"
        "i = scan_tree(sys.argv[1], jobs=1)\n"
        "print(json.dumps({'kernels': len(i.kernels), 'problems': [[p.file, p.line, p.message] for p in i.problems],"
        " 'seconds': time.perf_counter() - t, 'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    )
    res = subprocess.run([sys.executable, "-c", code, str(tree)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "RecursionError" not in res.stderr
    return json.loads(res.stdout)


@pytest.mark.slow
def test_a_10mb_line_is_reported_with_its_location_and_skipped(tmp_path: Path) -> None:
    write(tmp_path, {"table.cu": "#include <cstdio>\n" + KERNEL.format(name="k")
                     + "__device__ float table[] = {" + "1.0f," * 2_000_000 + "};\n",
                     "ok.cu": KERNEL.format(name="ok")})
    out = _scan_in_child(tmp_path)
    assert out["kernels"] == 1
    [problem] = out["problems"]
    assert problem[:2] == ["table.cu", 3] and "bytes long" in problem[2]
    assert out["peak_mb"] < 500


@pytest.mark.slow
def test_100k_nested_braces_scan_without_recursion(tmp_path: Path) -> None:
    depth = 100_000
    body = "{" * depth + "a[0] = 1.0f;" + "}" * depth
    write(tmp_path, {"deep.cu": f"__global__ void deep(float* a) {body}\n" + "__global__ void unclosed(float* a) {" * 3})
    out = _scan_in_child(tmp_path)
    assert out["kernels"] >= 1
    assert out["peak_mb"] < 500


@pytest.mark.slow
def test_a_200k_line_file_with_20k_kernels_is_linear(tmp_path: Path) -> None:
    unit = ("__global__ void k{i}(float* a, int n) {{\n  int i = threadIdx.x;\n  for (int t = 0; t < n; ++t) {{\n"
            "    a[i] += t;\n  }}\n}}\n\n\n\n\n")  # 10 lines a kernel
    text = "".join(unit.format(i=i) for i in range(20_000))
    write(tmp_path, {"big.cu": text})
    assert text.count("\n") >= 200_000
    out = _scan_in_child(tmp_path)
    assert out["kernels"] == 20_000 and out["problems"] == []
    assert out["seconds"] < 60 and out["peak_mb"] < 500


def test_a_file_replaced_with_the_same_size_and_mtime_is_read_again(tmp_path: Path) -> None:
    """A file renamed over another, or rewritten, with the old size and mtime put back (`mv b a; touch -r`): the
    cache's size and mtime match, the inode or its change time do not, so the file is hashed and parsed again."""
    app, cache = tmp_path / "app", tmp_path / "cache"
    write(app, {"a.cu": KERNEL.format(name="alpha"), "b.cu": KERNEL.format(name="gamma"), "c.cu": KERNEL.format(name="delta")})
    age(app)
    assert sorted(k.name for k in scan_tree(app, jobs=1, cache_dir=cache).kernels) == ["alpha", "delta", "gamma"]
    st = (app / "a.cu").stat()
    os.rename(app / "b.cu", app / "a.cu")  # same size (the names are as long), mtime put back
    os.utime(app / "a.cu", ns=(st.st_atime_ns, st.st_mtime_ns))
    (app / "b.cu").write_text(KERNEL.format(name="alpha"))
    os.utime(app / "b.cu", ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))
    got = scan_tree(app, jobs=1, cache_dir=cache)
    assert sorted((k.file, k.name) for k in got.kernels) == [("a.cu", "gamma"), ("b.cu", "alpha"), ("c.cu", "delta")]
    st = (app / "c.cu").stat()
    (app / "c.cu").write_text(KERNEL.format(name="omega"))  # rewritten in place, same size and mtime
    os.utime(app / "c.cu", ns=(st.st_atime_ns, st.st_mtime_ns))
    got = scan_tree(app, jobs=1, cache_dir=cache)
    assert sorted((k.file, k.name) for k in got.kernels) == [("a.cu", "gamma"), ("b.cu", "alpha"), ("c.cu", "omega")]
    again = scan_tree(app, jobs=1, cache_dir=cache)  # and an unchanged tree is still answered from the cache
    assert again.kernels == got.kernels and again.extra["cached"] == "3" and again.extra["parsed"] == "0"


def test_records_survive_the_cache_unchanged(tmp_path: Path) -> None:
    app, cache = tmp_path / "app", tmp_path / "cache"
    small_app(app, n=2)
    age(app)
    cold = scan_tree(app, cache_dir=cache, jobs=1)
    warm = scan_tree(app, cache_dir=cache, jobs=1)
    assert [dataclasses.asdict(k) for k in warm.kernels] == [dataclasses.asdict(k) for k in cold.kernels]


@pytest.mark.slow
def test_concurrent_scans_share_the_cache_safely(tmp_path: Path) -> None:
    app, cache = tmp_path / "app", tmp_path / "cache"
    small_app(app, n=20)
    age(app)
    env = {**os.environ, "S2S_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "s2s", "scan", str(app), "--json"]
    runs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    outs = [r.communicate(timeout=120) for r in runs]
    assert all(r.returncode == 0 for r in runs), [e for _, e in outs]
    assert all(len(json.loads(o)["kernels"]) == 20 and not e.strip() for o, e in outs)
    assert not list((cache / "scan").glob(".*tmp"))  # no temporary file left behind
    again = scan_tree(app, cache_dir=cache, jobs=1)
    assert (again.extra["parsed"], again.extra["cached"]) == ("0", "20") and "warning" not in again.extra

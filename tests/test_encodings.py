"""Sources are bytes: files with Latin-1 and Windows-1252 bytes in comments and strings, in kernels and host code,
are scanned, extracted, instrumented and reintegrated, and every byte outside an edit stays as it was."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import needs_nvcc, run_cli

from s2s.base.encoding import LATIN1, UTF8, decode, encode, encoding_of, recode
from s2s.extract.extract import extract, write_extraction
from s2s.reintegrate.diff import file_diff
from s2s.reintegrate.splice import _kernel_span, splice_kernel
from s2s.scan.tree import scan_tree

# \xa9 is a Latin-1 copyright sign, \x93 \x94 \x96 Windows-1252 quotes and dash, \xe9 \xef Latin-1 letters: none of
# these bytes is valid UTF-8 where it stands.
CUDA_MAIN = (b"// Copyright \xa9 2009 Ex Ample, \x93all rights reserved\x94\n"
             b"#include <cstdio>\n"
             b"#include \"helpers.cuh\"\n\n"
             b"/* r\xe9sum\xe9: scale a vector \x96 one thread per element */\n"
             b"__global__ void scale(float* x, int n)\n"
             b"{\n"
             b"    int i = blockIdx.x * blockDim.x + threadIdx.x;  // na\xefve index\n"
             b"    if (i < n) x[i] = twice(x[i]);  /* \x93twice\x94 */\n"
             b"}\n\n"
             b"int main()\n"
             b"{\n"
             b"    const int n = 1024;  // \xa9\n"
             b"    float* d = 0;\n"
             b"    cudaMalloc(&d, n * sizeof(float));\n"
             b"    printf(\"n = %d\\n\", n);  // caf\xe9 \x93%d\x94 (nvcc takes no such bytes in a string)\n"
             b"    scale<<<(n + 255) / 256, 256>>>(d, n);\n"
             b"    cudaDeviceSynchronize();\n"
             b"    cudaFree(d);\n"
             b"    return 0;\n"
             b"}\n")
CUDA_HELPERS = (b"#pragma once\n"
                b"// helpers \xa9 Ex Ample\n"
                b"__device__ inline float twice(float v) { return 2.0f * v; /* d\xe9j\xe0 vu */ }\n")
CL_KERNEL = (b"/* kernels.cl \xa9 2011 Ex Ample \x96 \x93reference\x94 */\n"
             b"__kernel void saxpy(__global float* y, __global const float* x, const float a, const int n)\n"
             b"{\n"
             b"    int i = get_global_id(0);  /* na\xefve */\n"
             b"    if (i < n) y[i] = a * x[i] + y[i];\n"
             b"}\n")
CL_HOST = (b"/* host.c \xa9 Ex Ample */\n"
           b"#include <stdio.h>\n"
           b"#include <CL/cl.h>\n\n"
           b"void run(cl_command_queue q, cl_kernel k, int n)\n"
           b"{\n"
           b"    size_t global = (size_t)n;  /* \x93global\x94 size */\n"
           b"    printf(\"d\xe9but\\n\");\n"
           b"    clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);\n"
           b"}\n")


def _cuda_tree(root: Path) -> Path:
    root.mkdir()
    (root / "main.cu").write_bytes(CUDA_MAIN)
    (root / "helpers.cuh").write_bytes(CUDA_HELPERS)
    return root


def _cl_tree(root: Path) -> Path:
    root.mkdir()
    (root / "kernels.cl").write_bytes(CL_KERNEL)
    (root / "host.c").write_bytes(CL_HOST)
    return root


def test_encoding_round_trips_every_byte() -> None:
    every = bytes(range(256))
    assert encoding_of(every) == LATIN1 and encoding_of(b"caf\xc3\xa9") == UTF8 and encoding_of(b"plain") == UTF8
    assert encode(decode(every, LATIN1), LATIN1) == every
    assert recode(encode(decode(every, LATIN1), UTF8), LATIN1) == every  # Latin-1 -> the MEP's UTF-8 -> back
    assert encode("\u2192 \xa9", LATIN1) == "\u2192".encode() + b" \xa9"  # what Latin-1 cannot hold is written in UTF-8
    cut = "caf\xe9".encode()[:-1]  # a UTF-8 file's piece that ends inside a character keeps its bytes
    assert encode(decode(cut, UTF8), UTF8) == cut


def test_scan_finds_kernels_and_launches_in_any_encoding(tmp_path: Path) -> None:
    for tree, kernels, kind in ((_cuda_tree(tmp_path / "cu"), ["scale"], "chevron"),
                                (_cl_tree(tmp_path / "cl"), ["saxpy"], "clEnqueueNDRangeKernel")):
        index = scan_tree(tree)
        assert [k.name for k in index.kernels] == kernels
        assert [s.kind for s in index.launches] == [kind]
        assert not [p for p in index.problems if "UTF-8" in p.message or "not parsed" in p.message]
    res = run_cli("scan", str(tmp_path / "cu"))
    assert res.returncode == 0 and "scale" in res.stdout and "Traceback" not in res.stderr, res.stdout + res.stderr


@pytest.mark.parametrize("which", ["cuda", "opencl"])
def test_extract_and_splice_keep_every_byte(which: str, tmp_path: Path) -> None:
    tree = _cuda_tree(tmp_path / "t") if which == "cuda" else _cl_tree(tmp_path / "t")
    name, rel = ("scale", "main.cu") if which == "cuda" else ("saxpy", "kernels.cl")
    ex = extract(tree, name, mode="names")
    kernel_file = write_extraction(ex, tmp_path / "mep")
    mep_bytes = kernel_file.read_bytes()
    assert mep_bytes.decode("utf-8")  # the MEP is UTF-8 ...
    original = (tree / rel).read_bytes()
    kernel = original[ex.kernel.start_byte:ex.kernel.end_byte]
    assert recode(mep_bytes[ex.kernel_range[0]:ex.kernel_range[1]], LATIN1) == kernel  # ... and holds the same text
    if which == "cuda":
        assert "twice" in mep_bytes.decode() and "\xe9j\xe0 vu" in mep_bytes.decode()  # the helper's comment too
    dialect = "cuda" if which == "cuda" else "opencl"
    span = _kernel_span(mep_bytes, dialect, name)
    assert span is not None
    same = splice_kernel(original, (ex.kernel.start_byte, ex.kernel.end_byte), mep_bytes, span, mep_bytes, dialect, name)
    assert same == original  # no change: byte-identical
    changed_src = mep_bytes.replace(b"if (i < n)", b"if (i < n && i >= 0)")
    span = _kernel_span(changed_src, dialect, name)
    assert span is not None
    new = splice_kernel(original, (ex.kernel.start_byte, ex.kernel.end_byte), changed_src, span, mep_bytes, dialect, name)
    start, end = ex.kernel.start_byte, ex.kernel.end_byte
    assert new[:start] == original[:start] and new[len(new) - (len(original) - end):] == original[end:]
    assert new[start:len(new) - (len(original) - end)] == kernel.replace(b"if (i < n)", b"if (i < n && i >= 0)")
    diff = file_diff(original, new, rel)
    assert diff.count(b"\n-") == 1 and diff.count(b"\n+") == 2 and b"\n+    if (i < n && i >= 0)" in diff
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    (tmp_path / "k.diff").write_bytes(diff)
    assert subprocess.run(["git", "apply", str(tmp_path / "k.diff")], cwd=tree).returncode == 0
    assert (tree / rel).read_bytes() == new


@needs_nvcc
def test_capture_and_profile_instrumentation_keep_the_files_bytes(tmp_path: Path) -> None:
    from s2s.capture.profile import instrument_all

    tree = _cuda_tree(tmp_path / "cu")
    root, sites, _notes, backend = instrument_all(tree, tmp_path / "work", list(scan_tree(tree).launches))
    assert backend == "cuda" and sites == ["main.cu:18"]
    data = (root / "main.cu").read_bytes()
    at = 0
    for line in CUDA_MAIN.splitlines():  # every line of the file is there, in order, with its own bytes
        found = data.find(line.strip(), at)
        assert found >= 0, line
        at = found + len(line.strip())
    assert re.findall(rb"[\x80-\xff]+", data) == re.findall(rb"[\x80-\xff]+", CUDA_MAIN)
    assert (root / "helpers.cuh").read_bytes() == CUDA_HELPERS
    proc = subprocess.run(["nvcc", "-c", "-o", str(tmp_path / "main.o"), "main.cu"], cwd=root, capture_output=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]


# `s2s auto` end to end on an OpenCL application with Latin-1 and Windows-1252 bytes: tests/test_auto_latin1_opencl.py
# (every byte outside the edited ranges kept, on PoCL and on the GPU machine's OpenCL).

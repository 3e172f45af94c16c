"""Issue 29, class 2: a buffer the kernel writes is never labelled `in`, however the write is spelled.

Each kernel below writes `out` (and only reads `src`) through a spelling the read/write analysis once missed: a
function-like macro (also one named like the parameter it indexes), a `__device__` function given an element's
address, a local pointer assigned after its declaration, `auto`, a cast, a reference to an element, a pointer that
may be either of two buffers, a post-incremented pointer. Written here from scratch.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from s2s.extract.mep_writer import make_mep
from s2s.lang.access import param_access, roles
from s2s.lang.macros import function_macros

KERNELS = {
    "via_macro": ("#define PUT(a, i, v) a[i] = v\n",
                  "{ int i = threadIdx.x; PUT(out, i, src[i]); }"),
    "via_same_name_macro": ("#define out(I, J) out[(I) * 16 + (J)]\n",
                            "{ out(threadIdx.y, threadIdx.x) = src[threadIdx.x]; }"),
    "via_device_function": ("__device__ void store_at(float* slot, float v) { *slot = v; }\n",
                            "{ int i = threadIdx.x; store_at(&out[i], src[i]); }"),
    "via_late_alias": ("", "{ float* row; row = out + blockIdx.x * 32; row[threadIdx.x] = src[0]; }"),
    "via_auto_alias": ("", "{ auto row = out + blockIdx.x * 32; row[threadIdx.x] = src[0]; }"),
    "via_cast_alias": ("", "{ float2* v = reinterpret_cast<float2*>(out); v[threadIdx.x] = make_float2(src[0], 1.f); }"),
    "via_reference": ("", "{ float& cell = out[threadIdx.x]; cell = src[threadIdx.x]; }"),
    "via_either": ("", "{ float* dst = n > 0 ? out : out + 32; dst[threadIdx.x] = src[threadIdx.x]; }"),
    "via_bumped_pointer": ("", "{ float* w = &out[threadIdx.x * 4]; *w++ = src[0]; *w++ = src[1]; }"),
    "via_reference_parameter": ("template <typename T>\n__device__ void accumulate(T& total, const T& add, T scale)"
                                " { total += add * scale; }\n",
                                "{ int i = threadIdx.x; accumulate<float>(out[i], src[i], src[0]); }"),
}


def _source() -> str:
    head = "".join(pre for pre, _body in KERNELS.values())
    kernels = "".join(f"__global__ void {name}(const float* src, float* out, int n)\n{body}\n"
                      for name, (_pre, body) in KERNELS.items())
    launches = "".join(f"  {name}<<<2, 32>>>(d_src, d_out, 64);\n" for name in KERNELS)
    return ("#include <cuda_runtime.h>\n" + head + kernels + "int main() {\n  float *d_src, *d_out;\n"
            "  cudaMalloc((void**)&d_src, 64 * sizeof(float));\n  cudaMalloc((void**)&d_out, 64 * sizeof(float));\n"
            + launches + "  return 0;\n}\n")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("writes") / "app"
    root.mkdir()
    (root / "main.cu").write_text(_source())
    return root


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_written_buffer_is_out_or_inout_and_the_read_one_in(tree: Path, tmp_path: Path, kernel: str) -> None:
    _, m, _ = make_mep(str(tree), kernel, str(tmp_path / "m"))
    role = {p.name: p.role for p in m.params}
    assert role["out"] in {"out", "inout"}, role
    assert role["src"] == "in", role


def test_reads_are_not_taken_for_writes() -> None:
    text = ("__global__ void k(const float* a, float* b, float* c, int n) {\n"
            "  const float4* a4 = reinterpret_cast<const float4*>(a);\n  float s = a4[threadIdx.x].x + __ldg(&b[0]);\n"
            "  if (c != nullptr && c[0] > s) s = c[1];\n  float* walk = b;\n  for (; walk < b + n; walk += 4) s += *walk;\n"
            "  c[2] = s;\n}\n")
    acc = param_access(text, "cuda", ["a", "b", "c"])
    assert roles(acc) == {"a": "in", "b": "in", "c": "inout"}, acc


def test_an_element_bound_to_a_non_const_reference_parameter_is_written() -> None:
    from s2s.lang.access import reference_params

    helpers = ("__device__ void bump(float& r, float v) { r += v; }\n"
               "__device__ float twice(const float& r) { return 2.f * r; }\n"
               "__device__ float plain(float r, int& n) { n++; return r; }\n"
               "template <typename T, typename U> __device__ void put(std::pair<T, U> p, T &slot) { slot = p.first; }\n"
               "__device__ void moved(float&& r) {}\n")
    refs = reference_params(helpers)
    assert refs == {"bump": {0}, "plain": {1}, "put": {1}}, refs
    text = ("__global__ void k(const float* a, float* b, float* c, int* n) {\n"
            "  int i = threadIdx.x;\n  bump(b[i], twice(a[i]));\n  c[i] = plain(a[i], n[0]);\n}\n")
    assert roles(param_access(text, "cuda", ["a", "b", "c", "n"], ref_params=refs)) == \
        {"a": "in", "b": "inout", "c": "out", "n": "inout"}
    assert roles(param_access(text, "cuda", ["a", "b", "c", "n"]))["b"] == "in"  # without the helpers' signatures


def test_a_field_written_alone_keeps_the_rest_of_the_element() -> None:
    text = ("__global__ void k(double4* q, const double* v) {\n  q[threadIdx.x].z = v[threadIdx.x];\n}\n")
    assert roles(param_access(text, "cuda", ["q", "v"])) == {"q": "inout", "v": "in"}  # x, y, w pass through


def test_a_pointer_stored_where_its_uses_are_not_seen_counts_as_written() -> None:
    text = ("struct Slot { float* p; };\n__global__ void k(float* a, float* b) {\n  Slot s; s.p = a; s.p[0] = 1.f;\n"
            "  float* table[2] = {b, b};\n  table[1][0] = 2.f;\n}\n")
    acc = param_access(text, "cuda", ["a", "b"])
    assert "write" in acc["a"] and "write" in acc["b"], acc


def test_macro_expansion_is_for_analysis_only() -> None:
    from s2s.lang.macros import expand_macro_calls

    macros = function_macros(b"#define F(I, J) F[(I) * 8 + (J)]\n#define CLEAR(x) do { (x) = 0; } while (0)\n")
    assert expand_macro_calls("F(i, j + 1) = F(j, i);", macros) == "(F[((i)) * 8 + ((j + 1))]) = (F[((j)) * 8 + ((i))]);"
    assert expand_macro_calls("CLEAR(F(0, 0));", macros) == "do { (((F[((0)) * 8 + ((0))]))) = 0; } while (0);"

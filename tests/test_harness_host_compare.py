"""The CUDA harness's host comparisons on outputs large enough to be split across the host's cores (map_chunks): the
same verdicts, counts and first indices as one pass over the buffer would give, and a constant output told from one
that is constant only within each chunk; and its reader of captured .npy files (one sized, parallel read). Compiled with
nvcc and run on the host (no GPU)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import needs_nvcc

HOST = r'''
#include "s2s_harness_common.cuh"
using namespace s2s;
static std::vector<unsigned char> bytes_of(const std::vector<float>& v) {
    std::vector<unsigned char> b(v.size() * 4); memcpy(b.data(), v.data(), b.size()); return b;
}
static void run(const char* name, const std::vector<float>& r, const std::vector<float>& v, const unsigned char* wr,
                const unsigned char* vw) {
    Check c{name, "out"};
    auto rb = bytes_of(r), vb = bytes_of(v);
    compare_buffer<float, VisitPrim>(c, "", rb.data(), vb.data(), r.size(), wr, vw, 1e-3, 1e-4);
    printf("%s\n", c.json().c_str());
}
int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {  // read_npy on each file named: its size, first and last float, or its error
        std::vector<unsigned char> d;
        std::string err;
        const bool ok = read_npy(argv[i], d, err);
        float first = 0, last = 0;
        if (ok && d.size() >= 4) { memcpy(&first, d.data(), 4); memcpy(&last, d.data() + d.size() - 4, 4); }
        printf("{\"npy\": %d, \"ok\": %d, \"bytes\": %zu, \"first\": %.9g, \"last\": %.9g, \"err\": \"%s\"}\n", i, (int)ok,
               d.size(), first, last, err.c_str());
    }
    const size_t n = (size_t)5 << 20;  // 5M elements: up to six chunks
    std::vector<float> r(n), v(n);
    for (size_t i = 0; i < n; ++i) r[i] = v[i] = 1.0f + (float)(i % 1000) * 0.5f;
    std::vector<unsigned char> wr(n, 1), vw(n, 1);
    std::vector<float> bad = v;
    bad[10] += 1.0f; bad[4000000] += 7.0f;
    run("bad", r, bad, wr.data(), vw.data());
    bad[3500000] = NAN;
    vw[2500000] = 0; vw[4100000] = 0;
    run("unwritten", r, bad, wr.data(), vw.data());
    std::vector<unsigned char> vw2(n, 1);
    vw2[5000000] = 1; wr[5000000] = 0;
    run("extra", r, v, wr.data(), vw2.data());
    run("nan", r, std::vector<float>(v.begin(), v.end()), nullptr, nullptr);
    std::vector<float> withnan = v; withnan[4200000] = NAN;
    run("nan", r, withnan, nullptr, nullptr);
    run("zero", r, std::vector<float>(n, 0.0f), nullptr, nullptr);
    std::vector<float> h(n), h2(n);
    for (size_t i = 0; i < n; ++i) { h[i] = i < n / 2 ? 3.0f : 4.0f; h2[i] = h[i] * (1.0f + 1e-7f); }
    run("const", h, std::vector<float>(n, 3.0f), nullptr, nullptr);
    run("halves", h, h2, nullptr, nullptr);
    std::vector<unsigned char> a(n, 7), b(n, 7);
    b[4500001] = 8;
    printf("{\"mismatch\": [%zu, %zu]}\n", first_mismatch(a.data(), b.data(), n), first_mismatch(a.data(), a.data(), n));
    std::vector<unsigned char> p1(n * 4, POISON), p2(n * 4, POISON2);
    memcpy(p1.data(), r.data(), 4 * 4000000); memcpy(p2.data(), r.data(), 4 * 4000000);
    auto w = written_mask(p1.data(), p2.data(), n, 4);
    size_t nw = 0, last = 0; for (size_t i = 0; i < n; ++i) if (w[i]) { ++nw; last = i; }
    std::vector<unsigned char> zeros(8, 0), ff(8, POISON);
    printf("{\"written\": [%zu, %zu], \"all_bytes\": [%d, %d, %d]}\n", nw, last, (int)all_bytes(zeros.data(), 8, POISON2),
           (int)all_bytes(ff.data(), 4, POISON), (int)all_bytes(zeros.data(), 4, POISON));
}
'''


@pytest.mark.slow
@needs_nvcc
def test_chunked_comparisons_give_the_one_pass_verdicts(tmp_path: Path) -> None:
    from s2s.base.resources import templates_dir
    from s2s.mep.backends.cuda import CudaBackend

    (tmp_path / "t.cu").write_text(HOST)
    cc = subprocess.run([*CudaBackend().compiler(), f"-I{templates_dir()}", "t.cu", "-o", "t"], cwd=tmp_path,
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    import numpy as np

    big = np.arange(3_000_000, dtype="<f4")  # read in parallel chunks (the harness's read_npy)
    np.save(tmp_path / "big.npy", big)
    with open(tmp_path / "v2.npy", "wb") as fh:
        np.lib.format.write_array(fh, big[:10], version=(2, 0))
    raw = (tmp_path / "big.npy").read_bytes()
    (tmp_path / "short.npy").write_bytes(raw[:9])
    (tmp_path / "header.npy").write_bytes(raw[:40])  # the header says more than the file holds
    (tmp_path / "text.npy").write_text("not numpy at all")
    files = ["big.npy", "v2.npy", "short.npy", "header.npy", "text.npy", "missing.npy"]
    out = [json.loads(line) for line in subprocess.run([str(tmp_path / "t"), *files], capture_output=True, text=True,
                                                         check=True, cwd=tmp_path).stdout.splitlines()]
    npy = {files[o["npy"] - 1]: o for o in out if "npy" in o}
    assert npy["big.npy"]["ok"] and npy["big.npy"]["bytes"] == big.nbytes and npy["big.npy"]["last"] == 2_999_999.0
    assert npy["v2.npy"]["ok"] and npy["v2.npy"]["bytes"] == 40 and npy["v2.npy"]["last"] == 9.0
    assert not npy["short.npy"]["ok"] and "not a .npy file" in npy["short.npy"]["err"]
    assert not npy["header.npy"]["ok"] and "truncated .npy header" in npy["header.npy"]["err"]
    assert not npy["text.npy"]["ok"] and "not a .npy file" in npy["text.npy"]["err"]
    assert not npy["missing.npy"]["ok"] and "cannot open missing.npy" in npy["missing.npy"]["err"]
    c = {o["name"]: o for o in out if "name" in o and o["name"] != "nan"}
    nan = [o for o in out if o.get("name") == "nan"]
    # two values off, in different chunks: both counted, the first named with its values, the largest error kept
    assert not c["bad"]["ok"] and c["bad"]["first_bad"] == 10
    assert c["bad"]["message"].startswith("2 value(s) differ beyond tolerance (first at index 10: reference 6, variant 7")
    assert c["bad"]["max_abs_err"] == 7 and c["bad"]["max_rel_err"] == 7
    # unwritten elements are reported first, counted over every chunk
    assert c["unwritten"]["unwritten"] == 2 and c["unwritten"]["first_bad"] == 2500000
    assert "2 element(s) the reference writes were left unwritten (first at index 2500000)" in c["unwritten"]["message"]
    assert "the variant wrote 1 element(s) the reference leaves untouched (first at index 5000000)" in c["extra"]["message"]
    assert nan[0]["ok"] and not nan[1]["ok"] and "NaN/Inf in 1 element(s)" in nan[1]["message"] and nan[1]["first_bad"] == 4200000
    assert c["zero"]["message"] == "output is all zero where the reference's is not"
    # constant across chunks where the reference is not: caught; constant only within each half: not constant
    assert c["const"]["message"] == "output is constant (3) where the reference's is not"
    assert c["halves"]["ok"], c["halves"]
    assert out[-2]["mismatch"] == [4500001, 5 << 20]
    assert out[-1]["written"] == [4000000, 3999999] and out[-1]["all_bytes"] == [1, 1, 0]

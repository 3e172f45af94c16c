"""Special files in a tree: a FIFO, a link to /dev/zero, a huge sparse file, a linked /etc, dangling links and a copy
made inside the tree. Scan and extract read regular files only, with a size cap; the tree copies (capture's, the dry
run's, auto's) never read through a link nor block. Everything runs in a child process with a timeout, so a hang
fails the test instead of hanging it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

GOOD = "__global__ void good(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 1.0f; }\n" \
       "void run(float* x, int n) { good<<<1, 32>>>(x, n); }\n"


def _python(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env)


def _special_tree(root: Path) -> Path:
    root.mkdir()
    (root / "good.cu").write_text(GOOD)
    os.mkfifo(root / "pipe.cu")
    os.symlink("/dev/zero", root / "zero.cu")
    with open(root / "big.cu", "wb") as fh:  # sparse: no disk is used
        fh.truncate(10 << 30)
    os.symlink(root / "gone.cu", root / "dangling.cu")
    (root / "Makefile").write_text("include flags.mk\ninclude zero.mk\ninclude huge.mk\nall:\n\tnvcc $(EXTRA) -DN=4 -c good.cu\n")
    os.mkfifo(root / "flags.mk")  # Makefile fragments extract reads for flags
    os.symlink("/dev/zero", root / "zero.mk")
    with open(root / "huge.mk", "wb") as fh:  # over the cap: not read (sparse, so the test costs no disk)
        fh.seek(96 << 20)
        fh.write(b"\nEXTRA = -DHUGE=1\n")
    return root


def test_scan_and_extract_read_regular_files_only_with_a_cap(tmp_path: Path) -> None:
    tree = _special_tree(tmp_path / "t")
    res = _python(f"""
import json
import resource
from s2s.scan.tree import scan_tree
from s2s.extract.extract import extract
index = scan_tree({str(tree)!r}, jobs=1)
ex = extract({str(tree)!r}, "good", mode="names", index=index)
print(json.dumps({{"kernels": [k.name for k in index.kernels], "problems": {{p.file: p.message for p in index.problems}},
                  "extracted": "good" in ex.text, "defines": ex.defines,
                  "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
""")
    assert res.returncode == 0, res.stderr
    import json

    got = json.loads(res.stdout)
    assert got["kernels"] == ["good"] and got["extracted"]
    assert got["defines"] == {"N": "4"}  # from the Makefile; its FIFO, /dev/zero and 96 MiB fragments were not read
    problems = got["problems"]
    assert "a FIFO" in problems["pipe.cu"]
    assert "a device" in problems["zero.cu"]
    assert "over the 64 MiB limit" in problems["big.cu"] and "10,737,418,240 bytes" in problems["big.cu"]
    assert "unreadable" in problems["dangling.cu"]
    peak_kib = got["peak_kib"]  # the child's own peak (RUSAGE_CHILDREN would hold this worker's earlier children, nvcc too)
    assert peak_kib < 1 << 20, f"the scan peaked at {peak_kib} KiB"  # under 1 GiB: nothing big was read


def test_scan_cli_lists_the_skipped_files_with_the_reason(tmp_path: Path) -> None:
    tree = _special_tree(tmp_path / "t")
    res = subprocess.run([sys.executable, "-m", "s2s", "scan", str(tree)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stdout + res.stderr
    out = res.stdout + res.stderr
    assert "good" in out and "a FIFO" in out and "64 MiB" in out


def test_tree_copy_keeps_links_as_links_and_skips_special_files(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.cu").write_text(GOOD)
    (tree / ".git").mkdir()
    (tree / ".git" / "HEAD").write_text("x")
    os.mkfifo(tree / "src" / "pipe.cu")
    os.symlink("/etc", tree / "etc")  # a directory link out of the tree: never read through
    os.symlink("../outside.txt", tree / "up.txt")  # a relative link out of the tree
    (tmp_path / "outside.txt").write_text("outside")
    os.symlink(tree / "src" / "a.cu", tree / "abs_in.cu")  # an absolute link inside the tree
    os.symlink("src/a.cu", tree / "rel_in.cu")
    os.symlink("nowhere/at/all", tree / "dangling")
    os.symlink(".", tree / "src" / "loop")  # followed, it would never end
    with open(tree / "data.bin", "wb") as fh:  # sparse, with data past a 1 GiB hole
        fh.seek(1 << 30)
        fh.write(b"tail")
    dest = tree / "kc"  # the copy inside the tree itself (`s2s capture --keep-copy T/kc`)
    res = _python(f"""
from pathlib import Path
from s2s.capture.instrument import copy_tree
from s2s.base.treefiles import copy_tree as plain
print(plain(Path({str(tree)!r}), Path({str(dest)!r}), (".git",)))
copy_tree(Path({str(tree)!r}), Path({str(tmp_path / "c2")!r}))
""", timeout=60)
    assert res.returncode == 0, res.stderr
    assert "src/pipe.cu: a FIFO, not copied" in res.stdout
    assert (dest / "src" / "a.cu").read_text() == GOOD and not (dest / ".git").exists()
    assert os.readlink(dest / "etc") == "/etc" and (dest / "etc").is_symlink()
    assert (dest / "up.txt").is_symlink() and (dest / "up.txt").read_text() == "outside"
    assert os.readlink(dest / "abs_in.cu") == "src/a.cu" and os.readlink(dest / "rel_in.cu") == "src/a.cu"
    assert (dest / "abs_in.cu").resolve() == (dest / "src" / "a.cu")  # into the copy, never back into the tree
    assert os.readlink(dest / "dangling") == "nowhere/at/all"
    assert os.readlink(dest / "src" / "loop") == "."
    assert not (dest / "kc").exists() and not (dest / "src" / "pipe.cu").exists()
    assert (tmp_path / "c2" / "src" / "a.cu").is_file() and (tmp_path / "c2" / "etc").is_symlink()
    copied = dest / "data.bin"
    assert copied.stat().st_size == (1 << 30) + 4 and copied.stat().st_blocks * 512 < (1 << 20)  # still sparse
    with open(copied, "rb") as fh:
        fh.seek(1 << 30)
        assert fh.read() == b"tail"


def test_profile_instrumentation_copies_a_tree_with_special_files(tmp_path: Path) -> None:
    tree = _special_tree(tmp_path / "t")
    os.symlink("/etc", tree / "etc")
    res = _python(f"""
from pathlib import Path
from s2s.scan.tree import scan_tree
from s2s.capture.profile import instrument_all
tree = Path({str(tree)!r})
root, sites, notes, backend = instrument_all(tree, Path({str(tmp_path / "work")!r}), list(scan_tree(tree, jobs=1).launches))
print(sites, notes)
""")
    assert res.returncode == 0, res.stderr
    assert "good.cu:2" in res.stdout and "left out of the work copy: " in res.stdout and "pipe.cu: a FIFO" in res.stdout
    app = tmp_path / "work" / "app"
    assert (app / "etc").is_symlink() and not (app / "pipe.cu").exists()
    assert (app / "zero.cu").is_symlink() and (app / "dangling.cu").is_symlink()
    assert (app / "big.cu").stat().st_size == 10 << 30 and (app / "big.cu").stat().st_blocks < 2048  # a sparse copy


@pytest.mark.slow
def test_auto_copies_links_as_links_and_skips_special_files(tmp_path: Path) -> None:
    """`s2s auto` on the OpenCL sample with a linked /etc, a dangling link, a FIFO and a file whose read fails: no
    traceback, no hang, the work copy holds the links as links (auto.py's _copy_tree through
    s2s.base.treefiles.copy_tree)."""
    import shutil

    from conftest import SAMPLES

    tree = tmp_path / "app"
    shutil.copytree(SAMPLES / "ocl_solver", tree, ignore=shutil.ignore_patterns("build", "ocl_solver"))
    os.symlink("/etc", tree / "etc")
    os.symlink("nowhere", tree / "dangling.h")
    os.mkfifo(tree / "fifo")
    os.symlink("/proc/self/mem", tree / "kernels" / "unreadable.cl")  # a regular file whose read fails (EIO)
    work = tmp_path / "w"
    res = subprocess.run([sys.executable, "-m", "s2s", "auto", str(tree), "--kernels", "matvec", "--work", str(work),
                          "--max-evals", "1", "--rounds", "1", "--no-patterns", "--diff", str(tmp_path / "a.diff")],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode in (0, 1) and "Traceback" not in res.stderr, res.stdout + res.stderr
    staged = work / "tree"
    assert os.readlink(staged / "etc") == "/etc" and os.readlink(staged / "dangling.h") == "nowhere"
    assert not (staged / "fifo").exists() and (staged / "kernels" / "linalg.cl").is_file()

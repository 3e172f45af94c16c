"""Issue 29, class 3: an application that exits unless given arguments is described by the run its authors wrote
down (a Makefile's `run` target, a run script, a README command line), never by a run without arguments, which
launches nothing; without such a line its command-line values are FILL-IN. Written here from scratch.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from s2s.extract.mep_writer import make_mep
from s2s.mep.fill_in import fill_ins
from s2s.mep.manifest import FILL_IN
from s2s.scan.run_line import default_run

NEEDS_ARGS = """#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
__global__ void scale(float* a, int n, float f) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= f; }
int main(int argc, char* argv[]) {
  int n = 256;
  float f = 1.f;
  if (argc != 4) {
    printf("Usage: %s <length> <factor> <repeat>\\n", argv[0]);
    return 1;
  }
  n = atoi(argv[1]);
  f = atof(argv[2]);
  const int repeat = (int)strtol(argv[3], NULL, 10);
  float* d;
  cudaMalloc((void**)&d, n * sizeof(float));
  for (int r = 0; r < repeat; r++) scale<<<(n + 127) / 128, 128>>>(d, n, f);
  cudaFree(d);
  return 0;
}
"""
MAKEFILE = """program = main
LAUNCHER =
all: $(program)
$(program): main.cu
\tnvcc -O3 -o $@ $<
run: $(program)
\t$(LAUNCHER) ./$(program) 5000 0.5 10 > log.txt
"""
USAGE = NEEDS_ARGS.replace("int main(", "static void usage(const char* name) {\n  printf(\"%s N F R\\n\", name);\n"
                            "  exit(1);\n}\nint main(").replace(
    '    printf("Usage: %s <length> <factor> <repeat>\\n", argv[0]);\n    return 1;\n', "    usage(argv[0]);\n")
UNGUARDED = NEEDS_ARGS.replace('  if (argc != 4) {\n    printf("Usage: %s <length> <factor> <repeat>\\n", argv[0]);\n'
                               '    return 1;\n  }\n', "")
RUNS = {
    "makefile": {"Makefile": MAKEFILE},
    "script": {"run.sh": "#!/bin/sh\nmake\n# ./main 1 1 1 is a smoke test\n./main 5000 0.5 10 | tee log\n"},
    "readme": {"README.md": "# Scale\nBuild with `make`, then run\n\n```\n$ ./main 5000 0.5 10\n```\n"},
}


def _tree(tmp_path: Path, files: dict[str, str], source: str = NEEDS_ARGS) -> Path:
    root = tmp_path / "suite" / "app"
    root.mkdir(parents=True)
    (root / "main.cu").write_text(source)
    for name, content in files.items():
        (root / name).write_text(content)
    return tmp_path / "suite"


@pytest.mark.parametrize("where", sorted(RUNS))
@pytest.mark.parametrize("source", [NEEDS_ARGS, USAGE, UNGUARDED], ids=["return", "usage_exits", "argv_read_unguarded"])
def test_the_written_down_run_gives_the_values(tmp_path: Path, where: str, source: str) -> None:
    assert source.count("exit(1)") == (source is USAGE) and ("if (argc" in source) == (source is not UNGUARDED)
    tree = _tree(tmp_path, RUNS[where], source)
    m = make_mep(str(tree), "scale", str(tmp_path / "m"))[1]
    p = {q.name: q for q in m.params}
    assert (p["n"].value, p["f"].value, p["a"].count) == (5000, 0.5, 5000), p["n"].source
    assert m.launch.grid == (40, 1, 1) and m.launch.block == (128, 1, 1), m.launch.source
    assert "needs its arguments" in p["n"].source and "5000 0.5 10" in p["n"].source


def test_without_a_run_line_the_values_are_fill_in_not_the_initial_ones(tmp_path: Path) -> None:
    m = make_mep(str(_tree(tmp_path, {})), "scale", str(tmp_path / "m"))[1]
    p = {q.name: q for q in m.params}
    assert p["n"].value == FILL_IN and p["f"].value == FILL_IN and p["a"].count == FILL_IN, p["n"].source  # not 256
    assert FILL_IN in m.launch.grid
    assert any("no run line was found" in n for n in m.notes)
    why = {f.key: f.why for f in fill_ins(m)}  # the summary and the README say why, first thing
    assert why["params.n.value"].startswith("argv[1]: not known") and "no run line" in why["params.n.value"], why


def test_arguments_that_are_not_plain_decimals_are_fill_in(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"run.sh": "./main 5e3 0x10 10\n"})
    m = make_mep(str(tree), "scale", str(tmp_path / "m"))[1]
    p = {q.name: q for q in m.params}
    assert p["n"].value == FILL_IN and p["f"].value == FILL_IN, p["n"].source  # atoi("5e3") is 5, atof is 5000


def test_an_application_that_runs_without_arguments_keeps_its_defaults(tmp_path: Path) -> None:
    optional = NEEDS_ARGS.replace("if (argc != 4)", "if (argc > 4)").replace(
        "n = atoi(argv[1]);", "if (argc > 1) n = atoi(argv[1]);").replace(
        "f = atof(argv[2]);", "if (argc > 2) f = atof(argv[2]);").replace(
        "(int)strtol(argv[3], NULL, 10)", "argc > 3 ? atoi(argv[3]) : 1")
    m = make_mep(str(_tree(tmp_path, {}, optional)), "scale", str(tmp_path / "m"))[1]
    p = {q.name: q for q in m.params}
    assert (p["n"].value, p["f"].value) == (256, 1.0), p["n"].source


def test_run_line_spellings(tmp_path: Path) -> None:
    d = tmp_path / "a"
    d.mkdir()
    (d / "Makefile").write_text("EXE = prog\nARGS = -n 64\nrun: $(EXE)\n\t@echo running\n\tmpirun -np 1 ./$(EXE) $(ARGS) 2>&1\n")
    found = default_run(d, tmp_path)
    assert found is not None and found.args == ("-n", "64") and found.where == "a/Makefile:5", found
    (d / "Makefile").write_text("run:\n\t./prog $(UNSET)\n")
    assert default_run(d, tmp_path) is None  # an argument the Makefile does not set is not known

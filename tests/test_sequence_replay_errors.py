"""A sequence harness that did not build is reported with the compiler's first error, not make's last lines."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from s2s.base.errors import UserError
from s2s.sequence.replay import _first_error, replay

NVCC_OUTPUT = """\
harness.cu(41): error: identifier "s2s_missing" is undefined
      s2s_missing(a, b);
      ^

1 error detected in the compilation of "harness.cu".
make: *** [Makefile:5: harness] Error 2
"""


def test_the_first_error_and_the_source_line_it_quotes() -> None:
    assert _first_error(NVCC_OUTPUT) == 'harness.cu(41): error: identifier "s2s_missing" is undefined | s2s_missing(a, b);'
    assert _first_error("make: *** [Makefile:5: harness] Error 2\n") == "make: *** [Makefile:5: harness] Error 2"
    assert _first_error("") == "no output"


@pytest.mark.skipif(shutil.which("make") is None, reason="make needed")
def test_replay_of_a_harness_that_does_not_build_names_the_error(tmp_path: Path) -> None:
    (tmp_path / "sequence.json").write_text("{}")
    (tmp_path / "Makefile").write_text("harness:\n\t@printf 'harness.cu(7): error: expected a \";\"\\n  int x = 1\\n\\n"
                                       "1 error detected in the compilation of \"harness.cu\".\\n'; exit 1\n")
    with pytest.raises(UserError) as err:
        replay(tmp_path, 1)
    assert 'harness.cu(7): error: expected a ";" | int x = 1' in err.value.one_line()
    assert "harness.cu" in err.value.one_line()

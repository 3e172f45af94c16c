"""One typedef reader (s2s.lang.typedefs) for extraction and capture: extraction keeps the branch its unit's flags make
active, capture keeps every branch; on the same file they agree, and the MEP's standalone OpenCL type table agrees with
both on the plain typedefs it reads."""
from __future__ import annotations

from pathlib import Path

import pytest

from s2s.extract.decls import file_decls
from s2s.extract.mep_writer import type_aliases
from s2s.lang.typedefs import typedefs
from s2s.scan.sources import SourceFile

TYPES = """\
typedef float real_t;
typedef real_t scalar_t;                 /* a typedef of a typedef */
typedef const unsigned int cuint;
typedef short int i16;
typedef unsigned long long u64;
#if CLASS == 'D'
typedef long INT_TYPE;
#else
typedef int INT_TYPE;
#endif
#ifdef USE_DOUBLE
typedef double acc_t;
#else
typedef float acc_t;
#endif
typedef struct { float x, y; } point;     /* a layout (read as a struct), not an alias */
typedef struct particle particle_t;
struct particle { float m; };
using index_t = unsigned int;
using real2_t = real_t;
using cptr_t = const float*;
typedef float vec_t, *pvec_t;
// typedef double commented_t;
template <typename T> struct Traits { typedef T value_type; };
"""

EVERY_BRANCH = {
    "real_t": ["float"], "scalar_t": ["real_t"], "cuint": ["unsigned int"], "i16": ["short int"], "u64": ["unsigned long long"],
    "INT_TYPE": ["long", "int"], "acc_t": ["double", "float"], "particle_t": ["particle"], "index_t": ["unsigned int"],
    "real2_t": ["real_t"], "vec_t": ["float"], "value_type": ["T"],
}


def _items(tmp_path: Path) -> list:  # type: ignore[type-arg]
    path = tmp_path / "types.h"
    path.write_text(TYPES)
    return file_decls(SourceFile(path, "types.h", TYPES.encode()))


def test_capture_reads_every_branch() -> None:
    assert typedefs(TYPES) == EVERY_BRANCH


@pytest.mark.parametrize(("macros", "int_type", "acc"), [
    ({"CLASS": ("'S'", "-DCLASS='S'")}, "int", "float"),
    ({"CLASS": ("'D'", "-DCLASS='D'"), "USE_DOUBLE": ("1", "-DUSE_DOUBLE")}, "long", "double"),
])
def test_extraction_takes_the_active_branch_of_what_capture_reads(tmp_path: Path, macros: dict[str, tuple[str, str]],
                                                                   int_type: str, acc: str) -> None:
    active = type_aliases(_items(tmp_path), macros)
    assert active["INT_TYPE"] == int_type and active["acc_t"] == acc
    every = typedefs(TYPES)
    assert set(active) == set(every)
    for name, target in active.items():  # the two readers agree: extraction's choice is one of capture's branches
        assert target in every[name], name
        if len(every[name]) == 1:
            assert target == every[name][0], name


def test_an_undecidable_branch_gives_extraction_no_alias(tmp_path: Path) -> None:
    active = type_aliases(_items(tmp_path), {})  # CLASS unknown: `#if CLASS == 'D'` cannot be decided
    assert "INT_TYPE" not in active and active["acc_t"] == "float" and active["scalar_t"] == "real_t"


def test_the_standalone_opencl_table_agrees_on_plain_typedefs() -> None:
    pytest.importorskip("numpy")
    from s2s.mep.backends.opencl_types import Types

    table = Types([], [], TYPES).aliases
    every = typedefs(TYPES)
    plain = {"real_t", "scalar_t", "i16", "u64", "INT_TYPE", "acc_t"}  # one name after `typedef` words, on one line
    for name in plain:
        assert table[name] == every[name][0], name

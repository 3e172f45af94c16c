from __future__ import annotations

from s2s.lang.edits import Edit, Failure, LaunchChange, Success, apply_edits

SRC = b"__global__ void k(float* a, int n)\n{\n    int i = threadIdx.x;\n    if (i < n) a[i] = 1.0f;\n}\n"


def test_no_edits_is_identity() -> None:
    assert apply_edits(SRC, [], "cuda") == Success(SRC)


def test_replace_and_insert() -> None:
    at = SRC.index(b"1.0f")
    out = apply_edits(SRC, [Edit(at, at + 4, "2.0f"), Edit.insert(SRC.index(b"int i"), "// hi\n    ")], "cuda")
    assert isinstance(out, Success)
    assert b"a[i] = 2.0f;" in out.text and b"// hi\n    int i" in out.text


def test_insertions_at_one_point_keep_their_order() -> None:
    at = SRC.index(b"int i")
    out = apply_edits(SRC, [Edit(at, at, "/*1*/"), Edit(at, at, "/*2*/")], "cuda")
    assert isinstance(out, Success) and b"/*1*//*2*/int i" in out.text


def test_overlap_is_a_failure() -> None:
    at = SRC.index(b"1.0f")
    out = apply_edits(SRC, [Edit(at, at + 4, "x"), Edit(at + 2, at + 3, "y")], "cuda")
    assert isinstance(out, Failure) and "overlapping" in out.reason


def test_insertion_inside_replacement_overlaps() -> None:
    at = SRC.index(b"1.0f")
    assert isinstance(apply_edits(SRC, [Edit(at, at + 4, "x"), Edit(at + 1, at + 1, "y")], "cuda"), Failure)


def test_out_of_range_is_a_failure() -> None:
    assert isinstance(apply_edits(SRC, [Edit(5, len(SRC) + 3, "")], "cuda"), Failure)


def test_new_parse_error_is_a_failure() -> None:
    at = SRC.index(b"a[i] =")
    out = apply_edits(SRC, [Edit(at, at, "a[i] = = ;")], "cuda")
    assert isinstance(out, Failure) and "does not parse" in out.reason


def test_existing_errors_do_not_block_edits() -> None:
    broken = SRC + b"int x = ;\n"
    at = broken.index(b"1.0f")
    assert isinstance(apply_edits(broken, [Edit(at, at + 4, "3.0f")], "cuda"), Success)


def test_opencl_edits_parse_with_address_spaces() -> None:
    src = b"__kernel void k(__global float* a) { a[get_global_id(0)] = 0; }\n"
    at = src.index(b"float*") + len(b"float*")
    out = apply_edits(src, [Edit(at, at, " restrict")], "opencl")
    assert isinstance(out, Success) and b"__global float* restrict a" in out.text


def test_launch_rules() -> None:
    grid, block = (40, 1, 1), (256, 1, 1)  # 10240 threads
    assert LaunchChange((128, 1, 1), "same-coverage").resolve(grid, block) == ((80, 1, 1), (128, 1, 1))
    assert LaunchChange((256, 1, 1), "rows-per-warp", per_item=32).resolve(grid, block) == ((1280, 1, 1), (256, 1, 1))
    assert LaunchChange((16, 16, 1), "tile").resolve((7, 7, 1), (16, 16, 1)) == ((7, 7, 1), (16, 16, 1))
    assert LaunchChange((32, 8, 1), "same-coverage").resolve((4, 4, 1), (16, 16, 1)) == ((2, 8, 1), (32, 8, 1))
    assert LaunchChange(None, "swap-xy").resolve((4, 2, 1), (32, 8, 1)) == ((2, 4, 1), (8, 32, 1))
    assert LaunchChange((256, 1, 1), "threads-for-elements").resolve((2, 2, 1), (16, 16, 1)) == ((4, 1, 1), (256, 1, 1))

"""Contractions (sums of products over k: matrix products of any operand layout, triangular ones, small fixed-width
products, triangular solves): shared-memory tiles (smem_tiling.py, contraction_tiling.py, with _cover.py for a launch
that covers the outputs exactly), register micro-tiles (register_blocking.py), the 128x128 blocked product
(contraction_blocking.py with _blocking_code.py, _blocking_body.py, _blocking_full.py, _blocking_store.py) and its
triangle (contraction_triangle.py, _triangle_code.py, _symmetry.py), a whole output row per thread (row_coarsen.py,
_row_words.py), a blocked forward substitution (triangular_solve_blocking.py, _strip_solve.py, _substitution.py)."""

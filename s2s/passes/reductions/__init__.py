"""Reductions, scans and histograms (many values combined into fewer): a thread-per-output loop split over more threads
(split_reduction.py with _lane_quads.py, _column_quads.py, _cluster_columns.py), a warp per row (warp_rows.py with
_row_loops.py, _row_scalars.py, _row_walks.py, _warp_scan.py), a block's shared-memory tree or scan as warp shuffles
(block_reduce_shuffle.py with _coarse_tree.py, _warp_segment.py; block_scan_shuffle.py with _block_scan.py,
_coarse_scan.py), same-address atomics summed first (atomic_accumulate.py, warp_reduce_atomics.py, _block_sum.py),
a histogram in shared memory (shared_histogram.py, _histogram_copies.py), a dot-product loop in vector words
(vector_loads.py, with the unit-stride check _unit_stride.py) and an accumulation into memory kept in a register
(register_accumulation.py)."""

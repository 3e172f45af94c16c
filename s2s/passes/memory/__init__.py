"""Memory access: elementwise kernels moving their arrays in wide words (vector_elementwise.py, vector_elementwise_2d.py,
with their shapes _elementwise.py, _elementwise_2d.py, _element_accesses.py, _element_code.py, _element_index.py,
_stride_loop.py), a grid-stride loop on a grid that fills the device (grid_stride_fill.py, _vector_words.py), whole
structures as wide words (struct_wide_io.py), coalescing by swapping the thread axes (coalesce_remap.py), a transpose
through a shared tile (smem_transpose.py), gathers from a shared window (gather_window.py, _gather.py), loads issued
before the stores (loads_first.py), loop-invariant loads read once (hoist_invariants.py)."""

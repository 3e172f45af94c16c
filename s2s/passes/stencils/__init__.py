"""Stencils: neighbour reads at constant offsets, staged in shared-memory tiles (stencil_tiling.py), 2.5-D blocking
along z (stencil_streaming.py, _streaming.py), outputs along y from a window of rows in registers (stencil_registers.py
with _register_window.py, _window_columns.py, _streamed_rows.py, _column_stores.py), a thread's walk along one axis
keeping what it reads again in registers (walk_registers.py with _walk_chunks.py, _walk_cols.py, _walk_emit.py); the
text they share is _stencil.py."""

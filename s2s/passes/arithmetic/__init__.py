"""Arithmetic and code generation of any kernel: fast math intrinsics (fast_math.py, _rsqrt.py), float kept in float
(precision_hygiene.py), unrolled innermost loops (loop_unroll.py), const and restrict on pointer parameters
(restrict_const.py)."""

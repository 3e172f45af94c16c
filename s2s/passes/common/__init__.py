"""What passes of several families read off a kernel: the tree (tree.py), its statements (statements.py), the global
thread index (thread_index.py), index steps checked numerically (index_steps.py), guards (guards.py) and the
thread-per-item loop shape (thread_loop.py)."""

"""The launch shape: a different block shape over the same threads (launch_config.py), several points per thread
(thread_coarsen.py, its unroll-and-jam form _jam.py), a thread's inner loop spread over a second launch dimension
(inner_loop_threads.py), a flat index split by / and % made a 2-D or 3-D launch (delinearize_2d.py, _digits.py)."""

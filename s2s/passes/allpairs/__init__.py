"""All-pairs interactions (n-body and kin): every thread's loop over all the elements staged in shared-memory tiles
(smem_allpairs.py), several bodies a thread (allpairs_bodies.py, _allpairs_copies.py, _allpairs_skip.py), several
threads a body (allpairs_lanes.py), tiles packed into wide words (allpairs_pack.py); the tiled loop they start from
is _pair_loop.py."""

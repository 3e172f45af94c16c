"""Stage 1, scan: the source tree read, kernels and launch sites found, hotspots ranked."""

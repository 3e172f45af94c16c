"""The language layer: parsing CUDA/HIP/OpenCL, C expressions, kernel facts, byte-range edits, CUDA API drift."""

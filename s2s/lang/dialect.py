"""Which parser dialect a backend or source language needs. No parser is imported here: the MEP's manifest reads it
on machines that build and run MEPs without tree-sitter."""
from __future__ import annotations


def dialect_of(language: str) -> str:
    """The parser dialect for a backend or source language: "opencl" for OpenCL C, "cuda" for CUDA and HIP."""
    return "opencl" if language == "opencl" else "cuda"

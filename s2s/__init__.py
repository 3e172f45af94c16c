"""s2s: extract, optimize and reintegrate GPU hotspots of HPC applications."""

__version__ = "0.1.0"

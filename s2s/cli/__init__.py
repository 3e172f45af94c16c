"""The command line on top of the stages: parse, call the library, print (`python -m s2s.cli X` = `s2s X`)."""
from .main import main

__all__ = ["main"]

"""The Minimal Executable Program: its manifest, its history, the backends that build, run, verify and time it."""

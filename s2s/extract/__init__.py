"""Stage 2, extract: a kernel's dependency closure and sizes pulled out of the tree into an MEP."""

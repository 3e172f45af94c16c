"""Stage 3, optimize: proposers, the pass registry, verified rounds, patterns and the report."""

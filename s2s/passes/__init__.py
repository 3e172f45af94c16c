"""Rewrite passes, one per module; the registry lives in s2s.passes_registry."""

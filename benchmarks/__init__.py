"""Benchmarks: lens against flax (and pure JAX as the limit)."""

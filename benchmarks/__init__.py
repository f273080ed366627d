"""Benchmarks: each module prints one JSON document of figures."""

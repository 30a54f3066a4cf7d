"""Benchmarks: every ratio they print is measured side by side in the same run."""

"""Benchmark harness: specviz algorithms and Hugging Face assisted generation on one pair, in one process."""

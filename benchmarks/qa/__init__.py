"""Retrieval quality on the GoT corpus (``python -m benchmarks.qa.run``)."""

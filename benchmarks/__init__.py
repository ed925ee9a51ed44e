"""Benchmarks of graphrag_got: load speed, Text2KGBench extraction quality, GoT retrieval.

A package so that its scripts run as modules from the repository root
(``python -m benchmarks.text2kgbench.replay``) and tests import them
(``from benchmarks.text2kgbench import scorer``) without editing ``sys.path``.
"""

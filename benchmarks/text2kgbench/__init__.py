"""Text2KGBench (Mihindukulasooriya, Tiwari, Enguix, Lata; ISWC 2023; data CC BY-SA 4.0).

``scorer`` (the benchmark's metrics), ``reproduce`` (published Vicuna-13B numbers re-scored),
``replay`` (those answers through our validator) and ``live`` (our extractor on sample sentences).
Run each from the repository root as ``python -m benchmarks.text2kgbench.<name>``.
"""

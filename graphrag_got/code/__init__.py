"""Code as a knowledge graph: a deterministic Python extractor (tree-sitter) and the blast radius.

``extractor.run_code_extraction`` writes the same ``extraction.json`` contract as the LLM extraction,
for the ontology ``ontology/code.json``; ``impact.impact`` answers "what is affected if this changes"
over the loaded graph. Usage and measurements: ``benchmarks/code/README.md``.
"""

"""Extraction quality: score an extraction.json against a hand-curated gold one.

``score.py`` is the scorer (library and CLI), ``ladder.py`` runs pipeline configurations on recorded
model answers and scores each one. See ``README.md`` in this folder.
"""

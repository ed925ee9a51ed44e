"""Importers that turn ontologies published in other formats into our ontology JSON."""

from graphrag_got.importers.text2kgbench import import_text2kgbench, renamed_labels, write_ontology

__all__ = ["import_text2kgbench", "renamed_labels", "write_ontology"]

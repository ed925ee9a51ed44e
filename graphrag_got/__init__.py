"""graphrag_got: ontology-constrained knowledge graphs in Neo4j, and GraphRAG over them."""

__version__ = "0.1.0"

"""Graph: the Neo4j server, the driver, and everything written to or read from the graph by the pipeline
(load, notes structure, vectors) with its Cypher."""

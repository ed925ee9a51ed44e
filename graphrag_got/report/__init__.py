"""Reports for people: the discarded-relations report, the HTML view of the graph and their renderer."""

#: Entities `viz --from-neo4j` draws at most, best connected first. Kept here, outside the renderer
#: (networkx, jinja2, pydantic), so that the CLI shows it in `--help` without importing them.
DEFAULT_NEO4J_LIMIT = 500

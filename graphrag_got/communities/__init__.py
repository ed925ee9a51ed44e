"""Communities: detection over the entity graph, storage as `:Community` nodes and LLM reports."""

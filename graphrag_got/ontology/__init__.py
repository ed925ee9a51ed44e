"""The ontology: the validated model, the JSON schema generated from it, importers from other formats."""

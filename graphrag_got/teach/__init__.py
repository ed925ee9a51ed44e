"""Teaching the extractor on the user's own text: see what was extracted (the review page), pick and
correct passages (stored beside the ontology, :mod:`graphrag_got.ontology.example_store`), and measure
the configuration on them (eval, leave-one-out)."""

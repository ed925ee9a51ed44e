"""Reports for people: the discarded-relations report, the HTML view of the graph and their renderer."""

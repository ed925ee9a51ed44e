"""The names the code extractor writes and the impact analysis reads (those of ``ontology/code.json``).

Kept in one place so the extractor, the Cypher builders and the tests agree; a test checks that the
shipped ontology declares every one of them.
"""

from __future__ import annotations

FILE = "File"
MODULE = "Module"
CLASS = "Class"
FUNCTION = "Function"
TEST = "Test"
CLASSES = (FILE, MODULE, CLASS, FUNCTION, TEST)

DEFINES = "DEFINES"
CONTAINS = "CONTAINS"
IMPORTS = "IMPORTS"
CALLS = "CALLS"
INHERITS = "INHERITS"
TESTS = "TESTS"
#: A call through an instance may run this override in a subclass (resolution ``dispatch``).
MAY_CALL = "MAY_CALL"
RELATIONS = (DEFINES, CONTAINS, IMPORTS, CALLS, INHERITS, TESTS, MAY_CALL)

#: Relation attribute holding the source lines of a fact ("12, 40").
LINES = "lines"
#: Relation attribute of CALLS, TESTS and MAY_CALL: how the call was resolved (symbols.RESOLUTIONS).
RESOLUTION = "resolution"

#: Relations followed backwards by the blast radius: who calls, subclasses, imports or tests a node.
IMPACT_RELATIONS = (CALLS, INHERITS, IMPORTS, TESTS)

#: Dynamic evidence (:mod:`graphrag_got.code.coverage`): a test executed lines of a function in a
#: recorded run; the relation attribute ``source`` says where a fact comes from.
EXECUTES = "EXECUTES"
SOURCE = "source"
COVERAGE = "coverage"

#: A relation ``ask impact`` follows when a graph holds it (a test's or fixture's use of a fixture);
#: the extractor links fixtures with TESTS/CALLS of resolution ``fixture`` instead, so it writes none.
USES_FIXTURE = "USES_FIXTURE"
#: Resolutions ``ask impact`` reports as a static, resolved path (``static exact``); a CALLS edge of any
#: other resolution (and every MAY_CALL edge) makes the path ``static dispatch``.
EXACT_RESOLUTIONS = ("exact", "inferred", "fixture")

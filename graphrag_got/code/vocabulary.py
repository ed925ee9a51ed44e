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

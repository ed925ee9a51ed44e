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
RELATIONS = (DEFINES, CONTAINS, IMPORTS, CALLS, INHERITS, TESTS)

#: Relation attribute holding the source lines of a fact ("12, 40").
LINES = "lines"

#: Relations followed backwards by the blast radius: who calls, subclasses, imports or tests a node.
IMPACT_RELATIONS = (CALLS, INHERITS, IMPORTS, TESTS)

#: Dynamic evidence (:mod:`graphrag_got.code.coverage`): a test executed lines of a function in a
#: recorded run; the relation attribute ``source`` says where a fact comes from.
EXECUTES = "EXECUTES"
SOURCE = "source"
COVERAGE = "coverage"

#: Relations of the static resolver followed by ``ask impact`` when the graph holds them: a call
#: that may dispatch to an override (``MAY_CALL``) and a test's or fixture's use of a fixture
#: (``USES_FIXTURE``). A ``CALLS`` edge whose ``resolution`` attribute is set to something other
#: than :data:`EXACT_RESOLUTIONS` counts as dispatch too.
MAY_CALL = "MAY_CALL"
USES_FIXTURE = "USES_FIXTURE"
RESOLUTION = "resolution"
EXACT_RESOLUTIONS = ("exact",)

"""Reading extraction files for scoring: moved to :mod:`graphrag_got.teach.score_items` (the library's
``eval`` reads them too); the names stay importable from here."""

from graphrag_got.teach.score_items import (SUPPORTED_FORMATS, EntityItem, ExtractionItems,  # noqa: F401
                                            RelationItem, parse_items, read_extraction_file)

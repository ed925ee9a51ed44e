"""Questions over the graph: local (entity neighbourhoods) and global (community summaries).

    from graphrag_got.search import local_search, global_search
    s = settings   # each search takes the sections it reads
    res = local_search(driver, s.neo4j, "How did Ada Lovelace meet Charles Babbage?", chat=chat,
                       search=s.search, llm=s.llm, files=s.files, embedding=s.embedding)
    res = global_search(driver, s.neo4j, "¿Qué bandos hay en la guerra?", chat=chat,
                        search=s.search, llm=s.llm, files=s.files, embedding=s.embedding)
"""

from __future__ import annotations

from graphrag_got.search.global_ import CommunityRating, GlobalResult, global_search
from graphrag_got.search.anchors import Anchor, Match, find_anchors, match_entities
from graphrag_got.search.facts import Excerpt, Fact
from graphrag_got.search.local import LocalResult, local_search

__all__ = [
    "Anchor", "CommunityRating", "Excerpt", "Fact", "GlobalResult", "LocalResult", "Match",
    "find_anchors", "global_search", "local_search", "match_entities",
]  # fmt: skip

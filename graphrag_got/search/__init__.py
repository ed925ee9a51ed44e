"""Questions over the graph: local (entity neighbourhoods) and global (community summaries).

    from graphrag_got.search import local_search, global_search
    # each search takes the settings sections it reads
    res = local_search(driver, settings.neo4j, "How did Ada Lovelace meet Charles Babbage?", chat=chat,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    res = global_search(driver, settings.neo4j, "¿Qué bandos hay en la guerra?", chat=chat,
                        search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
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

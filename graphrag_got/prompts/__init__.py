"""Every prompt the project sends to a model, each with a version string.

A prompt's text comes only from its arguments (the ontology, the answer language) and the generic
instructions below: no word of any corpus appears here, so any ontology over any corpus, in any
language, gets the same treatment.

Templates: each prompt is a :class:`~graphrag_got.common.prompt_files.PromptTemplate` registered here
by one :func:`template` call (its name, version, text with ``${placeholders}``, the placeholders it
needs); the functions below fill the placeholders. A user replaces any of them with a file
``<name>.txt`` in the folder ``GRAPHRAG_PROMPTS_DIR`` (:func:`load_prompts`; ``graphrag-got prompts
export DIR`` writes the current ones); each function takes the :class:`PromptSet` in use
(``prompts=``, default :data:`BUILTIN`).

Versions: callers put a prompt's version in their cache keys (extraction answers, community
summaries, verdicts, classify calls), so a cached answer obtained under an older wording is never
reused: :meth:`PromptSet.version` gives the built-in version, plus the digest of a custom text.
Whoever edits a built-in prompt's text bumps its version here. Search answers are also cached by
LangChain on the full prompt text, which changes with the wording anyway.

Language: ``language=None`` lets the answer follow the question (search) or the content
(summaries); any other value (``"English"``) forces that language.
"""

from __future__ import annotations

# Registration order is the import order below (extraction, communities, search, verification, classify,
# mentions, terms): it is the order `graphrag-got prompts export` and `prompts list` show.
from graphrag_got.common.prompt_files import PromptSet
from graphrag_got.prompts.registry import *  # noqa: F403
from graphrag_got.prompts.registry import __all__ as _registry
from graphrag_got.prompts.extraction import *  # noqa: F403
from graphrag_got.prompts.extraction import __all__ as _extraction
from graphrag_got.prompts.communities import *  # noqa: F403
from graphrag_got.prompts.communities import __all__ as _communities
from graphrag_got.prompts.search import *  # noqa: F403
from graphrag_got.prompts.search import __all__ as _search
from graphrag_got.prompts.verify import *  # noqa: F403
from graphrag_got.prompts.verify import __all__ as _verify
from graphrag_got.prompts.classify import *  # noqa: F403
from graphrag_got.prompts.classify import __all__ as _classify
from graphrag_got.prompts.terms import *  # noqa: F403
from graphrag_got.prompts.terms import __all__ as _terms

__all__ = ["PromptSet", *_registry, *_extraction, *_communities, *_search, *_verify, *_classify, *_terms]

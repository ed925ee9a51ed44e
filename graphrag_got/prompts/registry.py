"""The prompt registry: every template by name, the built-in set, the language rules shared by the
prompts of :mod:`graphrag_got.prompts` (see its docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from graphrag_got.common.prompt_files import PromptSet, PromptTemplate, load_prompt_set

EXTRACTION_VERSION = "extract-v4"  # v3: a confidence per entity; v4: the ontology's annotated examples
COMMUNITY_SUMMARY_VERSION = "community-v4"  # v4: a report (findings citing members, rating) with excerpts
ANCHOR_VERSION = "anchor-v2"
LOCAL_ANSWER_VERSION = "local-answer-v4"  # v4: facts first, every part of the question, sources never narrated
MAP_VERSION = "map-v3"  # v3: reads a community report (findings, rating)
REDUCE_VERSION = "reduce-v4"  # v4: facts first, sources never narrated

#: Prompt name -> version, for display and for callers that key caches on several prompts.
VERSIONS: dict[str, str] = {
    "extraction": EXTRACTION_VERSION,
    "community_summary": COMMUNITY_SUMMARY_VERSION,
    "anchor": ANCHOR_VERSION,
    "local_answer": LOCAL_ANSWER_VERSION,
    "map": MAP_VERSION,
    "reduce": REDUCE_VERSION,
}

#: Every prompt template by name (the name of its override file, ``<name>.txt``), in registration order.
TEMPLATES: dict[str, PromptTemplate] = {}
#: The built-in prompts.
BUILTIN = PromptSet(TEMPLATES)


def template(name: str, version: str, text: str, *, required: Sequence[str] = (), about: str = "") -> str:
    """Register a prompt template (one call per prompt: that is all a new prompt needs to be overridable);
    returns its name, which the prompt's function renders with :meth:`PromptSet.render`."""
    if name in TEMPLATES:
        raise ValueError(f"prompt {name!r} is registered twice")
    TEMPLATES[name] = PromptTemplate(name, version, text, tuple(required), about)
    return name


def load_prompts(directory: str | Path | None) -> PromptSet:
    """The prompts in use: the built-in ones, with the files of ``directory`` (``settings.llm.prompts_dir``;
    None: none) in place of theirs. Raises :class:`~graphrag_got.errors.PromptError` for a bad file."""
    return load_prompt_set(TEMPLATES, directory)


def _set(prompts: PromptSet | None) -> PromptSet:
    return BUILTIN if prompts is None else prompts


def language_tag(language: str | None) -> str:
    """The part of a cache key that tells prompts in different forced languages apart."""
    return "" if language is None else f"|lang={language.strip()}"


def _in_language(language: str | None) -> str:
    """"in Spanish" for a named language, else "in the language of the question"."""
    lang = (language or "").strip()
    return f"in {lang}" if lang else "in the language of the question"


def _answer_language(language: str | None, follow: str) -> str:
    lang = (language or "").strip()
    return f"Answer in {lang}." if lang else f"Answer in the language of {follow}."


#: How every answer is written (local, global's reduce, DRIFT): what a reader checks is the facts
#: and their citations, so the answer states them and never describes its sources.
_ANSWER_STYLE = (
    "Begin with the direct answer. Answer every part of the question (who, what, when, where, why, as "
    "asked), each as a plain statement of the fact followed by its citation. Write about the subject, "
    "not about the sources: never describe, list or summarise the sources, and never write phrases "
    "such as \"according to the sources\" or \"the facts show\"."
)

__all__ = ["ANCHOR_VERSION", "BUILTIN", "COMMUNITY_SUMMARY_VERSION", "EXTRACTION_VERSION", "LOCAL_ANSWER_VERSION",
           "MAP_VERSION", "REDUCE_VERSION", "TEMPLATES", "VERSIONS", "language_tag", "load_prompts", "template"]  # fmt: skip

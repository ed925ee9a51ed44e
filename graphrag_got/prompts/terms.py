"""Prompts of the terms strategy: the key terms of a vault, found without a model, typed in batches."""

from __future__ import annotations

from collections.abc import Sequence

from graphrag_got.common.prompt_files import PromptSet
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts.classify import class_lines
from graphrag_got.prompts.registry import VERSIONS, _set, template

__all__: list[str] = []

# --- the terms extraction (graphrag_got.extract.terms) ---
TERMS_VERSION = "terms-v1"
VERSIONS["terms"] = TERMS_VERSION

#: What the answer writes for a term no class fits.
NO_CLASS = "none"

TERMS_SYSTEM = template(
    "terms.system", TERMS_VERSION, (
        "You read key terms of notes and give each the class of the ontology it is an instance of, or ${none}.\n"
        "Use the term and the line it is written in.\n\nCLASSES:\n${classes}\n- ${none}: not an instance of any class "
        "above (a common word, an action, a phrase).\n\nAnswer one line per term, in order, as\n"
        "<number>. <term> (<class>)"),
    required=("classes", "none"),
    about="extraction (terms strategy), the shared prefix of every typing call: ${classes} one line per class; "
          "${none} the word for a term no class fits")
TERMS_BATCH = template(
    "terms.batch", TERMS_VERSION, "TERMS (each with the line it is written in):\n${terms}", required=("terms",),
    about="terms strategy, one typing call: ${terms} one line per term, '<number>. <term> | <the line it is "
          "written in>'")
#: The prompts of the terms strategy (their version keys the stored types).
TERMS_PROMPTS = (TERMS_SYSTEM, TERMS_BATCH)


def terms_system_prompt(onto: Ontology, *, prompts: PromptSet | None = None) -> str:
    """The shared prefix of every typing call: the classes (names and meanings). The ontology only."""
    return _set(prompts).render(TERMS_SYSTEM, classes="\n".join(class_lines(onto)), none=NO_CLASS)


def terms_user_prompt(items: Sequence[tuple[str, str]], *, prompts: PromptSet | None = None) -> str:
    """One typing call: the numbered terms, each with the line it is written in."""
    lines = [f"{n}. {term} | {context}" for n, (term, context) in enumerate(items, 1)]
    return _set(prompts).render(TERMS_BATCH, terms="\n".join(lines))


__all__ += ["NO_CLASS", "TERMS_BATCH", "TERMS_PROMPTS", "TERMS_SYSTEM", "TERMS_VERSION", "terms_system_prompt",
            "terms_user_prompt"]

"""Verification prompts: a yes/no check of one extracted triple against its evidence (``GRAPHRAG_VERIFY``)."""

from __future__ import annotations

from graphrag_got.common.prompt_files import PromptSet
from graphrag_got.prompts.registry import VERSIONS, _set, template

__all__: list[str] = []


# --- verification (graphrag_got.extract.verify) ---
VERIFY_VERSION = "verify-v1"
VERSIONS["verify"] = VERIFY_VERSION


VERIFY_SYSTEM = template(
    "verify.system", VERIFY_VERSION, (
        "You check one statement against a passage of a text. Answer yes only if the passage itself states "
        "the statement (in any wording), with the same subject, relation and object in that direction. "
        "Answer no if the passage does not say it, says something else about these names, or states the "
        'reverse. No outside knowledge. Answer with only a JSON object: {"answer": "yes"} or {"answer": "no"}.'),
    about="verification of a kept triple (GRAPHRAG_VERIFY), system part")
VERIFY_QUESTION = template(
    "verify.question", VERIFY_VERSION, (
        "PASSAGE:\n${passage}\n\nSTATEMENT: ${subject} (${subject_type}) ${relation}${meaning} ${object} "
        "(${object_type})${attributes}\n\nDoes the passage state this? Answer yes or no."),
    required=("passage", "subject", "relation", "object"),
    about="verification, the question about one triple: ${passage} its evidence; ${subject}, ${subject_type}, "
          "${relation}, ${object}, ${object_type}; ${meaning} ' (<the relation's comment>)' or nothing; "
          "${attributes} '; <attribute>: <value>' per attribute")
#: The prompts of one verification call (their version keys the stored verdicts).
VERIFY_PROMPTS = (VERIFY_SYSTEM, VERIFY_QUESTION)


def verification_prompt(*, prompts: PromptSet | None = None) -> str:
    """System prompt of one yes/no check of a candidate triple against its passage."""
    return _set(prompts).render(VERIFY_SYSTEM)


def verification_question(subject: str, subject_type: str, relation: str, comment: str, obj: str, object_type: str,
                          attributes: dict[str, str], passage: str, *, prompts: PromptSet | None = None) -> str:
    """The user part of one check: the passage, then the statement with the relation's meaning."""
    meaning = f" ({comment.strip().rstrip('.')})" if comment and comment.strip() else ""
    extra = "".join(f"; {k}: {v}" for k, v in sorted(attributes.items()) if v)
    return _set(prompts).render(VERIFY_QUESTION, passage=passage, subject=subject, subject_type=subject_type,
                                relation=relation, meaning=meaning, object=obj, object_type=object_type,
                                attributes=extra)


__all__ += ["VERIFY_PROMPTS", "VERIFY_QUESTION", "VERIFY_SYSTEM", "VERIFY_VERSION", "verification_prompt", "verification_question"]  # fmt: skip

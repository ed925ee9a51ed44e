"""The community report prompt."""

from __future__ import annotations

from graphrag_got.common.prompt_files import PromptSet
from graphrag_got.prompts.registry import COMMUNITY_SUMMARY_VERSION, _set, template


# ---------------------------------------------------------------------------------------------
# Community summaries
# ---------------------------------------------------------------------------------------------


COMMUNITY_REPORT = template(
    "communities.report", COMMUNITY_SUMMARY_VERSION, (
        "You write the report of one community of a knowledge graph: a group of entities that are closely "
        "related.\n"
        "Use only the members, relations and source excerpts given. ${language_rule}\n"
        'Answer with a JSON object {"title": ..., "summary": ..., "findings": [{"statement": ..., '
        '"members": [...]}], "rating": ..., "rating_explanation": ...}:\n'
        "- title: names the group in a few words (what holds it together: its central member, its shared "
        "kind or its main subject);\n"
        "- summary: 3-6 sentences on who or what its key members are, how they are related (using the "
        "relations given) and, when the facts say it, when or where;\n"
        "- findings: 2-5 key findings, each one short statement with the names of the members it is about, "
        "written exactly as in MEMBERS;\n"
        "- rating: how important this group is to the whole corpus, a number from 0 (marginal) to 10 "
        "(central to it);\n"
        "- rating_explanation: one sentence saying why."),
    about="a community report (system part; the members, relations and excerpts follow): ${language_rule} "
          "the sentence saying which language to write in")


def community_summary_prompt(language: str | None = None, *, prompts: PromptSet | None = None) -> str:
    """System prompt of one community report: title, summary, key findings citing members, rating."""
    lang = (language or "").strip()
    write = f"Write in {lang}." if lang else (
        "Write in the language of the community's content (the language its names and facts are written in).")
    return _set(prompts).render(COMMUNITY_REPORT, language_rule=write)

__all__ = ["COMMUNITY_REPORT", "community_summary_prompt"]

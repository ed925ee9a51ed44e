"""Community reports checked like answers: a report keeps only what its community's facts back.

    res = summarize_communities(driver, settings.neo4j, chat, check=FactsCheck(), ...)

A report (:mod:`graphrag_got.communities.reports`) is written by a small model from its community's
members and the relations among them, and may state what those do not say ("A and B are allies"
where the facts say B betrays A). :class:`FactsCheck` checks every finding and every summary
sentence as a claim with the check of answers (:func:`graphrag_got.search.support.check_claims`),
against the community's own facts; deterministic, no model call:

* **Sources.** Each relation among the members is a fact: its fact line (with its attributes) and
  its two ends (the entity graph keeps no evidence sentence for a relation, so a fact has none). The
  members are one more source, about each of them and stating nothing between them.
* **Claims.** A claim cites the members source only; one naming two or more entities is re-cited by
  ``check_claims`` to the facts that hold them together. So a claim naming one entity is backed when
  it is a member; a claim naming an entity that is neither a member nor named with the rest by one
  fact is left out (``entity_not_in_sources``); a claim naming two or more members that no fact holds
  together is left out (``relation_not_in_sources``). A claim naming no entity is kept (nothing to
  check it by). The relation type names of the facts are taken out of a claim before it is checked:
  a finding that copies a fact line ("A ALLIED_WITH B") is checked by the entities it names, like any
  sentence. The members a finding cites are its topic, not a claim: only its statement is checked.
* **Only support.** A claim is left out only for a reason that says its facts do not back it
  (:data:`LEAVES_OUT`); a repeat of another claim is kept.
* **Left out.** A finding not backed is left out of the report; a summary sentence not backed is
  removed from the summary, unless no sentence of it is backed: then the summary is kept whole and
  its sentences are recorded as ``unbacked_kept``. Each is a :class:`ReportLeftOut`.

What it cannot see is what the answers check cannot see: a wrong relation between the right entities
("A married B" where the fact says A met B), and a statement taken from the report's source excerpts
alone (they are not among the facts: it is left out when it names entities no fact holds together).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Iterable, Literal

from graphrag_got.communities.check import CheckedReport
from graphrag_got.communities.embed import SummarizeResult
from graphrag_got.communities.graph import EntityGraph, Rel, fact_line
from graphrag_got.search.anchors import MatchIndex, match_entities
from graphrag_got.search.citations import Citation
from graphrag_got.search.support import REASON_LABELS, LeftOutClaim, SupportReason, check_claims, listing

#: Stored with every report it checked (``Community.report_check``): a new version checks the stored
#: reports again (from the cache or the node, never the model).
CHECK_VERSION = "report-check/1"
#: The reasons that leave a report claim out: its community's facts do not back it.
LEAVES_OUT = frozenset({SupportReason.ENTITY_NOT_IN_SOURCES, SupportReason.RELATION_NOT_IN_SOURCES,
                        SupportReason.NO_SOURCE, SupportReason.EMPTY})  # fmt: skip

#: A summary's sentences, split as ``llm.calls.drop_repeated_sentences`` splits them (kept ones rejoin with a space).
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_MATCHED = frozenset({"exact", "partial", "fuzzy"})


class ReportLeftOut(LeftOutClaim):
    """A finding or summary sentence of a community report that its community's facts do not back."""

    part: Literal["finding", "summary"]


@dataclass
class _Claim:
    statement: str
    sources: list[str]


class _CommunityIndex(MatchIndex):
    """The matcher of one community's report.

    Names are found among the keys and aliases of the whole graph (exact, and a distinctive word), so
    a claim naming an entity outside the community is seen: a matcher of the members alone would not
    see it and would keep the claim as naming no entity. Close spellings are looked for among the
    members' names only: against every key of a graph of 10^5 entities they cost ~50 ms a text (a
    report's check reads each of its facts), against the members well under 1 ms. A misspelled name of
    a non-member is then not seen."""

    def __init__(self, graph: MatchIndex, members: MatchIndex) -> None:  # noqa: D107 - no super().__init__: a view
        self.__dict__.update(graph.__dict__)
        self._members = members

    def close_keys(self, phrase: str, n: int = 1) -> list[str]:
        return self._members.close_keys(phrase, n)

    def close_words(self, word: str) -> list[str]:
        return self._members.close_words(word)

    def close_keys_many(self, phrases: Iterable[str]) -> dict[str, list[str]]:
        return self._members.close_keys_many(phrases)

    def close_words_many(self, words: Iterable[str]) -> dict[str, list[str]]:
        return self._members.close_words_many(words)


def catalog(eg: EntityGraph, uids: Iterable[str]) -> list[dict[str, Any]]:
    """Matcher rows ``{uid, key, name, type, aliases}`` of ``uids``."""
    return [{"uid": u, "key": eg.entities[u].get("key"), "name": eg.entities[u]["name"], "type": eg.entities[u]["type"],
             "aliases": eg.entities[u].get("aliases") or []} for u in uids]  # fmt: skip


def _without(text: str, types: Sequence[str]) -> str:
    """``text`` without the relation type names ``types`` written as words (longest first)."""
    for t in types:
        if t in text:
            text = re.sub(rf"(?<!\w){re.escape(t)}(?!\w)", " ", text)
    return " ".join(text.split())


def _detail(left: LeftOutClaim, member_names: set[str]) -> str:
    """The reason in words, about the community (the ids the check used are its own)."""
    if left.reason is SupportReason.RELATION_NOT_IN_SOURCES:
        return f"no relation among the community's members states {listing(left.entities)} together"
    if left.reason is SupportReason.ENTITY_NOT_IN_SOURCES:
        outside = [n for n in left.entities if n not in member_names
                   and not any(part in member_names for part in re.split(r" \(| / |\)", n))] or left.entities
        verb = "is" if len(outside) == 1 else "are"
        rest = ", nor named with the rest by a relation among them" if len(left.entities) > len(outside) else ""
        return f"{listing(outside)} {verb} not among the community's members{rest}"
    return left.detail


def check_report(eg: EntityGraph, index: MatchIndex, report: Mapping[str, Any], members: Sequence[str],
                 inner: Sequence[Rel]) -> CheckedReport:  # fmt: skip
    """The check of one report (module docstring); ``index``: the whole graph's matcher."""
    names = {eg.entities[u]["name"] for u in members}
    member_names = sorted(names)
    summary = " ".join(str(report.get("summary") or "").split())
    sentences = [s for s in _SENTENCE.split(summary) if s.strip()]
    findings = [f for f in report.get("findings") or []
                if isinstance(f, dict) and isinstance(f.get("statement"), str)]  # fmt: skip
    parts: list[tuple[Literal["finding", "summary"], str]] = [("finding", f["statement"]) for f in findings]
    parts += [("summary", s) for s in sentences]
    if not parts:
        return CheckedReport(summary=summary, findings=list(findings))
    cindex = _CommunityIndex(index, MatchIndex(catalog(eg, members)))
    types = sorted({r.type for r in inner}, key=lambda t: (-len(t), t))
    claims = [_Claim(_without(text, types), [f"M{i}"]) for i, (_, text) in enumerate(parts, start=1)]
    # A fact can back a claim only through an entity the claim names: its ends, or its attribute values
    # (read from its line). The others are not read: a big community's facts cost a matcher pass each.
    named = {u for c in claims for m in match_entities(c.statement, [], index=cindex) if m.how in _MATCHED
             for u in m.uids}  # fmt: skip
    facts = [r for r in inner if r.start in named or r.end in named or r.attributes]
    ends = [(eg.entities[r.start]["name"], eg.entities[r.end]["name"]) for r in facts]
    sources = [Citation(id=f"F{n}", kind="fact", entities=[a, b], text=fact_line(a, r.type, b, dict(r.attributes)))
               for n, (r, (a, b)) in enumerate(zip(facts, ends), start=1)]  # fmt: skip
    # one members source per claim: its id tells which claim a result is, and two claims never share sources
    sources += [Citation(id=c.sources[0], kind="report", text="", entities=member_names) for c in claims]
    result = check_claims(claims, sources, cindex)
    which = {c.sources[0]: i for i, c in enumerate(claims)}
    left: dict[int, ReportLeftOut] = {}
    for out in result.left_out:
        i = next((which[s] for s in out.sources if s in which), None)
        if i is None or out.reason not in LEAVES_OUT:
            continue  # a repeat (kept: the check is about support), or a claim it rewrote
        part, text = parts[i]
        left[i] = ReportLeftOut(part=part, statement=text, reason=out.reason, detail=_detail(out, names),
                                entities=out.entities)
    kept_findings = [f for i, f in enumerate(findings) if i not in left]
    n = len(findings)
    kept_sentences = [s for j, s in enumerate(sentences) if n + j not in left]
    dropped = [left[i] for i in sorted(left)]
    unbacked: list[ReportLeftOut] = []
    if sentences and not kept_sentences:  # no summary at all would be worse: kept whole, and recorded
        unbacked = [r for r in dropped if r.part == "summary"]
        dropped = [r for r in dropped if r.part != "summary"]
        kept_sentences = sentences
    return CheckedReport(summary=" ".join(kept_sentences), findings=kept_findings,
                         left_out=[r.model_dump(mode="json") for r in dropped],
                         unbacked_kept=[r.model_dump(mode="json") for r in unbacked])  # fmt: skip


class FactsCheck:
    """The report check ``summarize_communities(check=...)`` runs (module docstring). The whole graph's
    matcher is built on the first report checked, once per entity graph."""

    version = CHECK_VERSION

    def __init__(self) -> None:
        self._graph: tuple[EntityGraph, MatchIndex] | None = None

    def index(self, eg: EntityGraph) -> MatchIndex:
        if self._graph is None or self._graph[0] is not eg:
            self._graph = (eg, MatchIndex(catalog(eg, eg.entities)))
        return self._graph[1]

    def __call__(self, eg: EntityGraph, report: Mapping[str, Any], members: Sequence[str],
                 inner: Sequence[Rel]) -> CheckedReport:  # fmt: skip
        return check_report(eg, self.index(eg), report, members, inner)


def check_line(res: SummarizeResult) -> str:
    """``report claims left out (...): 3 (2 entity not in its sources, 1 relation not in its sources)``:
    what the check left out, over every report of the graph, for ``communities summarize`` and ``build``."""
    if res.report_check is None:
        return "report claims: not checked"
    order = [r.value for r in SupportReason]
    labels = {r.value: label for r, label in REASON_LABELS.items()}
    counts = sorted(res.left_out_reasons.items(),
                    key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))  # fmt: skip
    why = ", ".join(f"{n} {labels.get(reason, reason)}" for reason, n in counts)
    line = f"report claims left out (not backed by their community's facts): {res.left_out}"
    line += f" ({why})" if why else ""
    if res.unbacked_summaries:
        many = res.unbacked_summaries != 1
        them = "them" if many else "it"
        line += (f"; {res.unbacked_summaries} summar{'ies' if many else 'y'} kept though no sentence of {them} "
                 f"is backed (leaving {them} out would leave no summary)")
    return line


__all__ = ["CHECK_VERSION", "LEAVES_OUT", "FactsCheck", "ReportLeftOut", "catalog", "check_line", "check_report"]

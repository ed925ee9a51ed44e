"""What a community report keeps after its check: the contract between the reports and the check.

    res = summarize_communities(..., check=FactsCheck())   # graphrag_got.pipeline.report_check

A report is written by a small model and may state what its community's facts do not say.
:func:`graphrag_got.communities.reports.summarize_communities` hands every report it stores (asked
now, read from the cache, or stored before the check) to a :class:`ReportCheck`, which says which
findings and summary sentences its community backs (:class:`CheckedReport`). The check itself
(:mod:`graphrag_got.pipeline.report_check`) is the claim check of answers
(:func:`graphrag_got.search.support.check_claims`): search comes after communities in the pipeline,
so the callers that run both (``graphrag-got communities summarize``, ``graphrag-got build``) pass it
in, as they pass the chat model; ``check=None`` stores reports as the model wrote them.

What is stored:

* the report with the findings kept and the summary sentences kept (:func:`apply_check`);
* ``left_out``: one record per finding or summary sentence left out, with its ``part``, ``reason``
  (a :class:`~graphrag_got.search.support.SupportReason` value) and ``detail``;
* ``unbacked_kept``: the summary sentences kept though not backed, when leaving them out would have
  left no summary;
* ``report_check``: the version of the check, so a new version checks stored reports again (from
  the cache or the node, never the model).

The cache file (``<cache_dir>/communities/<key>.json``) keeps the model's report as parsed (every
finding, the whole summary) with what the check left out of it when it was written: the check runs
again on every read, so it never needs the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from graphrag_got.communities.graph import EntityGraph, Rel
from graphrag_got.communities.store import parse_findings, parse_records


@dataclass
class CheckedReport:
    """A report after its check: what it keeps and what was left out (JSON-ready records)."""

    summary: str
    findings: list[dict[str, Any]]
    left_out: list[dict[str, Any]] = field(default_factory=list)  # {part, statement, reason, detail, entities, sources}
    unbacked_kept: list[dict[str, Any]] = field(default_factory=list)  # summary sentences kept though not backed


class ReportCheck(Protocol):
    """Checks one report against its community: ``eg`` the entity graph, ``report`` the report as
    cached (title, summary, findings...), ``members`` the community's uids, ``inner`` the relations
    among them. Deterministic; ``version`` is stored with every report it checked."""

    version: str

    def __call__(self, eg: EntityGraph, report: Mapping[str, Any], members: Sequence[str],
                 inner: Sequence[Rel]) -> CheckedReport: ...  # fmt: skip


def stored_answer(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The report a node holds, as a record to check again (when its cache file is gone): the stored
    summary and findings, and the records an earlier check left out (carried over: what it left out of
    the findings and summary is no longer there to check)."""
    return {"title": rec.get("title"), "summary": rec.get("summary") or "", "findings": parse_findings(rec.get("findings")),
            "rating": rec.get("rating"), "rating_explanation": rec.get("rating_explanation") or "",
            "carried_left_out": parse_records(rec.get("left_out"))}  # fmt: skip


def apply_check(check: ReportCheck, eg: EntityGraph, answer: Mapping[str, Any], members: Sequence[str],
                inner: Sequence[Rel]) -> dict[str, Any]:  # fmt: skip
    """The record stored for ``answer`` (a cached report): its summary and findings as the check
    keeps them, with ``left_out``, ``unbacked_kept`` and ``report_check``."""
    checked = check(eg, answer, members, inner)
    left = list(checked.left_out)
    seen = {(r.get("part"), r.get("statement")) for r in left}
    left += [r for r in parse_records(answer.get("carried_left_out")) if (r.get("part"), r.get("statement")) not in seen]
    out = {k: v for k, v in answer.items() if k != "carried_left_out"}
    out.update({"summary": checked.summary, "findings": checked.findings, "left_out": left,
                "unbacked_kept": list(checked.unbacked_kept), "report_check": check.version})  # fmt: skip
    return out


__all__ = ["CheckedReport", "ReportCheck", "apply_check", "stored_answer"]

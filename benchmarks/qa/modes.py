"""DRIFT vs local vs global on the GoT questions, side by side: facts recalled, LLM calls, tokens.

For every question of ``questions.json`` (local ones list the facts a correct answer needs) the
three modes run through the one entry point, :func:`graphrag_got.search.answer.ask`, on the same
graph (the gold extraction by default, loaded with the safety rules of ``benchmarks.qa.run``:
the database is emptied first). Per question and mode:

* **context recall**: needed facts found among the sources the answer was given (fact citations
  ``[F..]``; global's sources are community extracts, so it recalls facts only through its answer);
* **answer recall**: needed facts whose two end names both appear in the answer text (normalized),
  a cheap proxy of "the answer states it" - not a judgement of correctness;
* **cited**: how many citations the answer kept, and how many invented ones were removed;
* **citation precision**: of the citations the answer kept, the share whose source supports the
  sentence that cites it. A proxy, computed without a judge model: the cited source is about at
  least one entity the sentence names (a name of the source's entities, or one of their words of 4+
  letters, found in the sentence after ``normalize_name``); a citation of a fact about other
  entities does not count. A citation that opens a line or sentence belongs to the sentence before
  it ("... en Rocadragón.\n[F1]"), so ids listed after "the sources are:" count as unsupported;
* **strict citation precision** (issue 42): the same, with a stricter proxy - the claim's *relation* must be
  in the cited source. Entities are found in the citing sentence with the graph's own matcher
  (:func:`graphrag_got.search.anchors.match_entities`: names, aliases, distinctive words, close
  spellings). A sentence naming two or more of them is supported by a cited source only when one
  place of that source (a fact with its attributes, its evidence sentence, one sentence of an excerpt or
  report, one report finding) names two of them together; a sentence naming one, when the source names
  it. Citations of sentences naming no entity cannot be judged this way and are counted apart
  (*unchecked*), not as supported. Computed from the answer text, so it scores answers of any version;
* **claims kept / left out**: the claims of a claims answer that its support check kept and left out
  (``AskResult.claims`` / ``left_out``), with the reasons; for a prose answer (or a version without the
  check) the answer's sentences count as kept and "left out" is not known (``-``);
* **language**: the answer is in the question's language (both identified with py3langid; an answer of
  fewer than 4 words besides its names is not judged); *retries*:
  answers asked again because the first came in another language;
* **narrates**: the answer talks about its sources (names "the sources", "the excerpts", "the
  community reports", "la información proporcionada"... outside its citation brackets) instead of
  only stating the facts;
* LLM calls, tokens in/out (``tokens_estimated`` when the provider gives no counts), seconds.

Global questions (``type: global``, ``--global-limit``) run in global mode only, scored by the share
of their expected entities the answer names. ``--held-out`` also answers the GoT questions of the
routing benchmark marked ``held_out`` end to end (``mode="auto"``: routed, then answered), scored on
language, citations and narration (they list no facts).

It needs a loaded graph with community reports **and a chat model**: communities are detected and
summarized with the same model first (cached per community). Any provider works
(``--provider ollama|openai|langchain|llamacpp``); ``--provider replay --replay-file FILE`` replays
recorded answers when you have a recording of this benchmark's calls (none ships: a recording is
tied to the model and the prompt versions). On 2 CPU cores with the embedded 1.5B model expect
~10 minutes per question (global maps every community), so start with ``--limit 3``.

    NEO4J_URI=bolt://127.0.0.1:7695 GRAPHRAG_HOME=/tmp/graphrag-qa .venv/bin/graphrag-got neo4j start
    NEO4J_URI=bolt://127.0.0.1:7695 .venv/bin/python -m benchmarks.qa.modes --provider ollama --limit 5
    # -> benchmarks/qa/results/modes.md and modes.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graphrag_got.communities.detect import detect_communities
from graphrag_got.communities.graph import read_entity_graph
from graphrag_got.communities.reports import summarize_communities
from graphrag_got.communities.store import write_communities
from graphrag_got.config import Settings
from graphrag_got.errors import GraphragGotError
from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import Ontology
from graphrag_got.pipeline.report_check import FactsCheck

from .run import DEFAULT_EXTRACTION, HERE, ROOT, load_fixed, load_questions, prepare_database

MODES = ("local", "global", "drift")
ROUTING_QUESTIONS = ROOT / "benchmarks" / "routing" / "questions.json"
RESULTS_MD = HERE / "results" / "modes.md"
RESULTS_JSON = HERE / "results" / "modes.json"


@dataclass
class ModeRow:
    question_id: str
    mode: str
    needed: int
    in_context: int = 0
    in_answer: int = 0
    cited: int = 0
    invented: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False
    cited_supported: int = 0
    language_ok: bool | None = None
    narrates: bool = False
    kind: str = "local"  # the question's kind: local | global | held-out (routed)
    seconds: float = 0.0
    error: str | None = None
    answer: str | None = None
    missing: list[str] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)  # id, entities, text: enough to score again
    claims_kept: int | None = None  # claims shown (a prose answer: its sentences)
    claims_left_out: int | None = None  # claims its check left out (None: no check in this version or format)
    left_out_reasons: dict[str, int] = field(default_factory=dict)
    recited: list[str] = field(default_factory=list)  # kept claims the check re-cited (their own ids did not back them)
    left_out: list[str] = field(default_factory=list)  # the claims left out, with why
    strict_cited: int = 0  # citations of sentences naming an entity of the graph
    strict_supported: int = 0  # of those, citations whose source holds the sentence's relation
    strict_unchecked: int = 0  # citations of sentences naming no entity (not judged)
    language_retry: bool = False
    pasted_shown: int = 0  # sentences of the shown answer pasting a context line (a relation type, "-- evidence:")
    rewritten: int = 0  # claims the check stated from the fact they pasted
    reports_cited: int = 0  # distinct community reports the answer cites
    answer_form: str | None = None  # local: written | extractive; global: the map form
    covered: int = 0  # global: claims added from uncited reports' best points
    rewritten_lines: list[str] = field(default_factory=list)  # "pasted -> stated" per rewritten claim


#: A context line pasted into an answer: the evidence marker, or a relation type of the ontology in capitals.
_EVIDENCE = re.compile(r"--\s*evidence\s*:", re.IGNORECASE)


def pasted_sentences(answer: str | None, onto: Ontology) -> int:
    """Sentences of ``answer`` that paste a context line (the count issue 52 asks to bring to zero)."""
    names = {r.name for r in onto.relations}
    rel = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b") if names else None
    return sum(1 for sentence, _ in _claims(answer or "")
               if _EVIDENCE.search(sentence) or (rel is not None and rel.search(sentence)))


def reports_cited(answer: str | None) -> int:
    """Distinct community reports ``[R..]`` the shown answer cites."""
    return len({i for _, ids in _claims(answer or "") for i in ids if i.startswith("R")})


def _in_line(fact: dict[str, str], line: str, symmetric: bool) -> bool:
    text = normalize_name(line)
    s, r, o = normalize_name(fact["subject"]), normalize_name(fact["relation"]), normalize_name(fact["object"])
    return f"{s} {r} {o}" in text or (symmetric and f"{o} {r} {s}" in text)


def score(question: dict[str, Any], result: Any, onto: Ontology) -> tuple[int, int, list[str]]:
    """(needed facts in the context, needed facts stated in the answer, the facts missing from both)."""
    facts = question.get("facts") or []
    lines = [c.text for c in result.sources if c.kind == "fact"]
    answer = normalize_name(result.answer or "")
    in_ctx = in_ans = 0
    missing = []
    for f in facts:
        rel = onto.relation(f["relation"])
        sym = bool(rel is not None and rel.symmetric)
        c = any(_in_line(f, line, sym) for line in lines)
        a = normalize_name(f["subject"]) in answer and normalize_name(f["object"]) in answer
        in_ctx += c
        in_ans += a
        if not (c or a):
            missing.append(f"{f['subject']} {f['relation']} {f['object']}")
    return in_ctx, in_ans, missing


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_BRACKET = re.compile(r"\[\s*[FCR]\d{1,4}(?:\s*[,;]\s*[FCR]\d{1,4})*\s*\]")
_IDS = re.compile(r"[FCR]\d{1,4}")
_WORD = re.compile(r"[^\W\d_]{4,}")
#: Words of an answer that talks about its sources instead of its subject (English and Spanish: the
#: languages of the benchmark's questions). A good answer states facts and cites ids; it has no reason
#: to name "the sources", "the excerpts" or "the draft answer" (the first live run showed "The answer
#: is based on the information provided in the Community Reports [R1]", "Las fuentes que restan son").
NARRATION = re.compile(
    r"\b(sources?|fuentes?|excerpts?|fragmentos?|extractos?|community reports?|informes? de (la )?comunidad|"
    r"draft answer|borrador|information provided|informaci[oó]n proporcionada)\b",
    re.IGNORECASE,
)


def _claims(answer: str) -> list[tuple[str, list[str]]]:
    """(sentence, ids it cites): a citation opening a sentence belongs to the sentence before it."""
    out: list[tuple[str, list[str]]] = []
    for sentence in _SENTENCE.split(answer or ""):
        sentence = sentence.strip()
        if not sentence:
            continue
        lead = _BRACKET.match(sentence)
        if lead and out:
            out[-1][1].extend(_IDS.findall(lead.group(0)))
            sentence = sentence[lead.end():].strip()
        ids = [i for b in _BRACKET.findall(sentence) for i in _IDS.findall(b)]
        out.append((_BRACKET.sub(" ", sentence), ids))
    return out


def _names_of(source: Any) -> list[str]:
    names = [n for n in (getattr(source, "entities", None) or []) if n]
    if not names:  # no graph view: the capitalized words of its text stand for its names
        names = re.findall(r"\b[A-ZÁÉÍÓÚÑ][\w'-]{3,}", getattr(source, "text", "") or "")
    return names


def supports(source: Any, sentence: str) -> bool:
    """Whether ``sentence`` names an entity ``source`` is about (the proxy described above)."""
    text = f" {normalize_name(sentence)} "
    words = set(_WORD.findall(text))
    for name in _names_of(source):
        norm = normalize_name(name)
        if norm and f" {norm} " in text:
            return True
        if any(w in words for w in _WORD.findall(norm)):
            return True
    return False


def citation_support(answer: str, sources: list[Any]) -> tuple[int, int]:
    """(citations of the answer, citations whose source supports the sentence citing it)."""
    by_id = {s.id: s for s in sources}
    total = ok = 0
    for sentence, ids in _claims(answer):
        for i in ids:
            if i not in by_id:
                continue  # invented: counted by the answer itself (invented_citations)
            total += 1
            ok += supports(by_id[i], sentence)
    return total, ok


def _entities(text: str, index: Any) -> list[frozenset[str]]:
    """The graph entities ``text`` names (each as its candidate uids), by the anchor matcher; a word or
    close spelling matched only where ``text`` writes it in lower case is a common noun ("en guerra"),
    not a name."""
    from graphrag_got.search.anchors import match_entities, normalize_words

    written: dict[str, list[str]] = {}
    for w in re.findall(r"\w+", text):
        written.setdefault(normalize_words(w), []).append(w)
    out: list[frozenset[str]] = []
    for m in match_entities(text, [], index=index):
        uids = frozenset(m.uids)
        seen = [w for t in m.term.split() for w in written.get(t, [])]
        common = m.how != "exact" and bool(seen) and all(w[:1].islower() for w in seen)
        if m.how in {"exact", "partial", "fuzzy"} and uids and uids not in out and not common:
            out.append(uids)
    return out


def _places(source: Any, index: Any) -> list[set[str]]:
    """The entity sets one place of ``source`` names together: a fact (its ends, its line, its evidence
    sentence), each sentence of its text, each report finding."""
    from graphrag_got.search.anchors import normalize_words

    def uids(text: str) -> set[str]:
        return {u for e in _entities(text, index) for u in e}

    def named(names: Any) -> set[str]:  # entity names as such: by key or alias, else as the matcher reads them
        out: set[str] = set()
        for name in names or []:
            out |= {e["uid"] for e in index.keys.get(normalize_words(name), [])} or uids(name)
        return out

    ends, text = named(getattr(source, "entities", None)), getattr(source, "text", "") or ""
    if getattr(source, "kind", "") == "fact":
        evidence = getattr(source, "evidence", None)
        return [ends | uids(text)] + ([ends | uids(evidence)] if evidence else [])
    places = [uids(s) for s in _SENTENCE.split(text) if s.strip()]
    places += [uids(getattr(f, "statement", "")) | named(getattr(f, "members", None))
               for f in getattr(source, "findings", None) or []]
    return places + ([ends] if ends else [])


def strict_support(answer: str, sources: list[Any], index: Any) -> tuple[int, int, int]:
    """(citations of sentences naming an entity, those whose source holds the sentence's relation, citations
    of sentences naming none): the stricter proxy of the module docstring."""
    by_id = {s.id: s for s in sources}
    cited = supported = unchecked = 0
    places: dict[str, list[set[str]]] = {}
    for sentence, ids in _claims(answer):
        named = _entities(sentence, index)
        for i in ids:
            if i not in by_id:
                continue
            if not named:
                unchecked += 1
                continue
            cited += 1
            if i not in places:
                places[i] = _places(by_id[i], index)
            need = 2 if len(named) >= 2 else 1
            supported += any(sum(1 for e in named if e & place) >= need for place in places[i])
    return cited, supported, unchecked


#: An answer with fewer words than this besides its names is too short to tell its language (not judged).
MIN_LANGUAGE_WORDS = 4


def same_language(question: str, answer: str | None) -> bool | None:
    """The answer is in the question's language (None when either cannot be identified, or the answer
    has fewer than ``MIN_LANGUAGE_WORDS`` words besides its names: a short claim about two names says
    little of its language, and a wrong guess on it would count as a wrong language)."""
    from graphrag_got.common.language import identify

    bare = _BRACKET.sub(" ", answer or "")
    words = [w for k, w in enumerate(bare.split()) if (k == 0 or not w[:1].isupper()) and any(c.isalpha() for c in w)]
    q, a = identify(question), identify(bare)
    if q is None or a is None or len(words) < MIN_LANGUAGE_WORDS:
        return None
    return q[0] == a[0]


def entity_recall(question: dict[str, Any], answer: str | None) -> tuple[int, list[str]]:
    """Expected entities of a global question named in the answer, and the ones missing (words compared
    folded, punctuation aside: "la Casa Lannister," names Casa Lannister)."""
    from graphrag_got.search.anchors import normalize_words

    text = f" {normalize_words(answer or '')} "
    hits, missing = 0, []
    for name in question.get("entities") or []:
        if f" {normalize_words(name)} " in text:
            hits += 1
        else:
            missing.append(name)
    return hits, missing


def _score_form(row: "ModeRow", question: str, res: Any, index: Any = None) -> None:
    row.cited, row.invented = len(res.citations), res.invented_citations
    total, row.cited_supported = citation_support(res.answer or "", res.sources)
    row.cited = total
    if index is not None and res.answer:
        row.strict_cited, row.strict_supported, row.strict_unchecked = strict_support(res.answer, res.sources, index)
    left_out = getattr(res, "left_out", None)
    if getattr(res, "answer_format", None) == "claims" and left_out is not None:  # the check of issue 42
        row.claims_kept, row.claims_left_out = len(res.claims), len(left_out)
        for c in left_out:
            reason = getattr(c.reason, "value", str(c.reason))
            row.left_out_reasons[reason] = row.left_out_reasons.get(reason, 0) + 1
        row.left_out = [c.line() for c in left_out]
        row.recited = [c.recite_line() for c in res.claims if getattr(c, "recited", False)]
    elif res.answer:
        row.claims_kept = sum(1 for _ in _claims(res.answer))
    row.language_retry = bool(getattr(res, "language_retry", False))
    row.language_ok = same_language(question, res.answer)
    row.narrates = bool(NARRATION.search(_BRACKET.sub(" ", res.answer or "")))
    row.sources = [{"id": c.id, "entities": list(c.entities), "text": c.text[:200]} for c in res.sources]
    row.llm_calls, row.input_tokens, row.output_tokens = res.llm_calls, res.input_tokens, res.output_tokens
    row.tokens_estimated, row.answer = res.tokens_estimated, res.answer
    rewritten = [c for c in getattr(res, "claims", None) or [] if getattr(c, "pasted", None)]
    row.rewritten, row.rewritten_lines = len(rewritten), [f"{c.pasted} -> {c.statement}" for c in rewritten]
    row.reports_cited = reports_cited(res.answer)
    detail = getattr(res, "detail", None)
    row.answer_form = getattr(res, "answer_form", None) or getattr(detail, "map_form", None)
    row.covered = int(getattr(detail, "covered", 0) or 0)


def run(driver: Any, settings: Settings, questions: list[dict[str, Any]], onto: Ontology, chat: Any,
        modes: tuple[str, ...] = MODES, progress: Any = None) -> list[ModeRow]:  # fmt: skip
    """Every question in its modes: local questions in ``modes``, global ones in global mode, held-out
    routing questions (``kind: held-out``) routed (``auto``). ``progress(row)`` after each answer."""
    from graphrag_got.search.anchors import entity_catalog
    from graphrag_got.search.answer import ask

    index = entity_catalog(driver, settings.neo4j, search=settings.search)[1]  # the graph does not change during the run
    rows = []
    for q in questions:
        kind = q.get("kind") or q["type"]
        mine = modes if kind == "local" else ("global",) if kind == "global" else ("auto",)
        for mode in mine:
            needed = len(q.get("facts") or q.get("entities") or [])
            row = ModeRow(q["id"], mode, needed, kind=kind)
            t = time.perf_counter()
            try:
                res = ask(driver, settings.neo4j, q["question"], mode, chat=chat, ontology=onto,
                          search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)  # type: ignore[arg-type]
            except GraphragGotError as exc:
                row.error = str(exc)
            else:
                if mode == "auto":
                    row.mode = f"auto->{res.mode}"
                if kind == "local":
                    row.in_context, row.in_answer, row.missing = score(q, res, onto)
                elif kind == "global":
                    row.in_answer, row.missing = entity_recall(q, res.answer)
                _score_form(row, q["question"], res, index)
                row.pasted_shown = pasted_sentences(res.answer, onto)
            row.seconds = round(time.perf_counter() - t, 2)
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


def _group(row: ModeRow) -> str:
    return f"{row.kind}: {row.mode.split('->')[0]}"


def totals(rows: list[ModeRow]) -> dict[str, dict[str, Any]]:
    """Per question kind and mode ("local: drift", "global: global", "held-out: auto")."""
    out: dict[str, dict[str, Any]] = {}
    for group in dict.fromkeys(_group(r) for r in rows):
        mine = [r for r in rows if _group(r) == group]
        answered = [r for r in mine if r.error is None]
        needed = sum(r.needed for r in mine) or 1
        cited = sum(r.cited for r in mine)
        lang = [r.language_ok for r in answered if r.language_ok is not None]
        out[group] = {
            "questions": len(mine), "errors": sum(r.error is not None for r in mine),
            "context_recall": round(sum(r.in_context for r in mine) / needed, 3) if mine[0].kind in ("local", "notes") else None,
            "answer_recall": round(sum(r.in_answer for r in mine) / needed, 3) if mine[0].kind != "held-out" else None,
            "citations": cited, "citation_precision": round(sum(r.cited_supported for r in mine) / cited, 3) if cited else None,
            "invented_citations": sum(r.invented for r in mine),
            "strict_citations": sum(r.strict_cited for r in mine), "strict_unchecked": sum(r.strict_unchecked for r in mine),
            "strict_precision": round(sum(r.strict_supported for r in mine) / max(1, sum(r.strict_cited for r in mine)), 3)
            if sum(r.strict_cited for r in mine) else None,
            "claims_kept": sum(r.claims_kept or 0 for r in mine),
            "claims_left_out": sum(r.claims_left_out or 0 for r in mine)
            if any(r.claims_left_out is not None for r in mine) else None,
            "left_out_reasons": _sum_reasons(mine), "claims_recited": sum(len(r.recited) for r in mine),
            "language_retries": sum(r.language_retry for r in mine),
            "pasted_shown": sum(r.pasted_shown for r in mine), "rewritten": sum(r.rewritten for r in mine),
            "reports_cited": round(sum(r.reports_cited for r in answered) / max(1, len(answered)), 2),
            "covered": sum(r.covered for r in mine),
            "in_question_language": f"{sum(lang)}/{len(lang)}", "narrating": sum(r.narrates for r in answered),
            "llm_calls": sum(r.llm_calls for r in mine), "input_tokens": sum(r.input_tokens for r in mine),
            "output_tokens": sum(r.output_tokens for r in mine), "seconds": round(sum(r.seconds for r in mine), 1),
        }  # fmt: skip
    return out


def _sum_reasons(rows: list[ModeRow]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        for k, v in r.left_out_reasons.items():
            out[k] = out.get(k, 0) + v
    return out


def _left(kept: int | None, left: int | None) -> str:
    return f"{kept if kept is not None else '-'} / {left if left is not None else '-'}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


def context_note(search: Any) -> str:
    """How a local answer's context was ordered and cut (search/rank.py), for the report's header."""
    if search.local_context_order == "question":
        return (f"ranked by the question, excerpts one sentence each, the best {search.local_answer_sources or 'all'} "
                "given (`GRAPHRAG_LOCAL_CONTEXT_ORDER=question`)")
    return "in retrieval order, facts then whole excerpts (`GRAPHRAG_LOCAL_CONTEXT_ORDER=retrieval`)"


def markdown(rows: list[ModeRow], tot: dict[str, dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = ["# Answers per mode, live (benchmarks/qa/modes.py)", "",
             f"Model: `{meta['model']}`; extraction `{meta['extraction']}`; {meta['questions']} questions; "
             f"{meta.get('machine', '')}", "",
             *([f"Local answers' context: {meta['context']}", ""] if meta.get("context") else []),
             *([meta["preface"], ""] if meta.get("preface") else []),
             "Recall: local questions, needed facts in the answer's context / stated in the answer (both end names "
             "named); global questions, expected entities named. Citation precision: cited source about an entity "
             "the citing sentence names (proxy, no judge). Strict: the cited source names two of the sentence's "
             "entities together (its relation; one entity: names it); [unchecked]: citations of sentences naming "
             "no entity. Claims kept / left out by the answer's support check (`-`: not checked).", "",
             "Pasted shown: sentences of the shown answer pasting a context line (a relation type in capitals, "
             "`-- evidence:`); rewritten: claims the check stated from the fact they pasted. Reports cited: distinct "
             "community reports per answer (mean); added: claims from uncited reports' best points.", "",
             "| kind: mode | questions | context recall | answer recall | citation precision (cited) | strict precision "
             "(cited) [unchecked] | claims kept / left out | pasted shown (rewritten) | reports cited (added) | "
             "invented ids | in question's language | language retries | "
             "narrating | LLM calls | tokens in/out | seconds | errors |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]  # fmt: skip
    for group, t in tot.items():
        lines.append(f"| {group} | {t['questions']} | {_pct(t['context_recall'])} | {_pct(t['answer_recall'])} | "
                     f"{_pct(t['citation_precision'])} ({t['citations']}) | {_pct(t['strict_precision'])} "
                     f"({t['strict_citations']}) [{t['strict_unchecked']}] | "
                     f"{_left(t['claims_kept'], t['claims_left_out'])} | {t.get('pasted_shown', '-')} "
                     f"({t.get('rewritten', '-')}) | {t.get('reports_cited', '-')} ({t.get('covered', '-')}) | "
                     f"{t['invented_citations']} | "
                     f"{t['in_question_language']} | {t['language_retries']} | {t['narrating']} | {t['llm_calls']} | "
                     f"{t['input_tokens']}/{t['output_tokens']} | {t['seconds']} | {t['errors']} |")  # fmt: skip
    reasons = {g: t["left_out_reasons"] for g, t in tot.items() if t["left_out_reasons"]}
    if reasons:
        lines += ["", "Left out, by reason: " + "; ".join(
            f"{g}: " + ", ".join(f"{k} {v}" for k, v in r.items()) for g, r in reasons.items())]  # fmt: skip
    recited = {g: t.get("claims_recited") for g, t in tot.items() if t.get("claims_recited")}
    if recited:
        lines += ["", "Kept claims re-cited (their own ids did not state them; another source of the context "
                  "does): " + "; ".join(f"{g}: {n}" for g, n in recited.items())]  # fmt: skip
    lines += ["", "| question | mode | form | needed | in context | in answer | cited (supported) | strict cited (supported) "
              "[unchecked] | claims kept / left out | pasted shown (rewritten) | reports cited (added) | invented | "
              "language | retried | narrates | calls | tokens in/out | seconds | error |",
              "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|--:|--:|--:|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r.question_id} | {r.mode} | {r.answer_form or '-'} | {r.needed} | {r.in_context} | {r.in_answer} | "
                     f"{r.cited} ({r.cited_supported}) | {r.strict_cited} ({r.strict_supported}) [{r.strict_unchecked}] | "
                     f"{_left(r.claims_kept, r.claims_left_out)} | {r.pasted_shown} ({r.rewritten}) | "
                     f"{r.reports_cited} ({r.covered}) | {r.invented} | {r.language_ok} | {r.language_retry} | "
                     f"{r.narrates} | {r.llm_calls} | {r.input_tokens}/{r.output_tokens} | {r.seconds} | "
                     f"{(r.error or '').replace('|', '/')} |")  # fmt: skip
    lines += ["", "## Answers", ""]
    for r in rows:
        text = (r.answer or r.error or "").strip().replace("\n", " ")
        lines.append(f"- **{r.question_id} / {r.mode}**: {text}")
        lines += [f"    - re-cited: {line}" for line in r.recited]
        lines += [f"    - left out: {line}" for line in r.left_out]
        lines += [f"    - rewritten: {line}" for line in r.rewritten_lines]
    return "\n".join(lines) + "\n"


def write_report(out: Path, rows: list[ModeRow], tot: dict[str, dict[str, Any]], meta: dict[str, Any]) -> None:
    """The Markdown report at ``out`` and the same numbers, with every row, in the JSON beside it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(rows, tot, meta), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "totals": tot, "rows": [asdict(r) for r in rows]},
                                                   ensure_ascii=False, indent=2) + "\n", encoding="utf-8")  # fmt: skip


def rescore(path: Path) -> int:
    """Score the stored answers of a report's JSON again (language, narration; citations where the
    sources were stored) and rewrite the report: a proxy can be fixed without paying the model again."""
    from types import SimpleNamespace

    data = json.loads(path.read_text(encoding="utf-8"))
    rows = [ModeRow(**r) for r in data["rows"]]
    onto = Ontology.from_file(ROOT / "ontology" / "got.json")
    every = {q["id"]: q for q in load_questions()}
    questions = {i: q["question"] for i, q in every.items()}
    routing = json.loads(ROUTING_QUESTIONS.read_text(encoding="utf-8"))["questions"]
    questions.update({q["id"]: q["question"] for q in routing})
    for row in rows:
        if row.answer is None:
            continue
        if row.question_id in questions:
            row.language_ok = same_language(questions[row.question_id], row.answer)
        row.narrates = bool(NARRATION.search(_BRACKET.sub(" ", row.answer)))
        row.pasted_shown = pasted_sentences(row.answer, onto)
        row.reports_cited = reports_cited(row.answer)
        if row.kind == "global" and row.question_id in every:
            row.in_answer, row.missing = entity_recall(every[row.question_id], row.answer)
        if row.sources:
            srcs = [SimpleNamespace(**s) for s in row.sources]
            row.cited, row.cited_supported = citation_support(row.answer, srcs)
    write_report(path.with_suffix(".md"), rows, totals(rows), data["meta"])
    print(f"rescored {len(rows)} answers: wrote {path.with_suffix('.md')} and {path}")
    return 0


def _print_row(row: ModeRow) -> None:
    print(f"{row.question_id} {row.mode}: {row.seconds} s, {row.llm_calls} calls, in answer {row.in_answer}/"
          f"{row.needed}, cited {row.cited} ({row.cited_supported} supported, {row.strict_supported} of "
          f"{row.strict_cited} strictly), claims kept / left out {_left(row.claims_kept, row.claims_left_out)}, "
          f"language ok {row.language_ok}" + (" (retried)" if row.language_retry else "")
          + (f", error: {row.error}" if row.error else ""), file=sys.stderr, flush=True)  # fmt: skip


def main(argv: list[str] | None = None, chat: Any = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.qa.modes", description=__doc__.split("\n")[0])
    ap.add_argument("--extraction", type=Path, default=DEFAULT_EXTRACTION)
    ap.add_argument("--provider", default=None, help="LLM provider (default: GRAPHRAG_LLM_PROVIDER)")
    ap.add_argument("--replay-file", type=Path, default=None, help="recorded answers for --provider replay")
    ap.add_argument("--limit", type=int, default=None, help="only the first N local questions")
    ap.add_argument("--skip", type=int, default=0,
                    help="leave out the first N local questions (--skip 6: the ones the live runs were not developed on)")
    ap.add_argument("--global-limit", type=int, default=0, help="also the first N global questions (global mode)")
    ap.add_argument("--global-skip", type=int, default=0,
                    help="leave out the first N global questions (--global-skip 2: the ones not developed on)")
    ap.add_argument("--held-out", action="store_true",
                    help="also the GoT held-out questions of the routing benchmark, answered with mode auto")
    ap.add_argument("--machine", default="", help="a note on the machine for the report (e.g. 'quiet, 2 cores')")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of local,global,drift")
    ap.add_argument("--force", action="store_true", help="wipe a database this benchmark did not load")
    ap.add_argument("--out", type=Path, default=RESULTS_MD, help="Markdown report (the JSON goes beside it)")
    ap.add_argument("--rescore", type=Path, default=None,
                    help="no model: score the answers stored in this JSON report again and rewrite it")
    args = ap.parse_args(argv)
    if args.rescore is not None:
        return rescore(args.rescore)
    from graphrag_got.graph.db import connect
    from graphrag_got.llm.factory import get_chat_model

    try:
        settings = Settings.load(llm_provider=args.provider, replay_file=args.replay_file)
        modes = tuple(m for m in args.modes.split(",") if m)
        if not set(modes) <= set(MODES):
            raise GraphragGotError(f"--modes takes {', '.join(MODES)}, got {args.modes!r}")
        onto = Ontology.from_file(ROOT / "ontology" / "got.json")
        every = load_questions()
        local = [q for q in every if q["type"] == "local"][args.skip:]
        questions = local[: args.limit]
        questions += [q for q in every if q["type"] == "global"][args.global_skip:][: args.global_limit]
        if args.held_out:
            routing = json.loads(ROUTING_QUESTIONS.read_text(encoding="utf-8"))["questions"]
            questions += [{**q, "kind": "held-out", "type": "held-out"} for q in routing
                          if q.get("held_out") and q.get("corpus") == "got"]  # fmt: skip
        chat = chat or get_chat_model(settings.llm, files=settings.files)
        with connect(settings.neo4j) as driver:
            prepare_database(driver, settings, force=args.force)
            load_fixed(driver, settings, args.extraction, onto)
            comms = detect_communities(read_entity_graph(driver, settings.neo4j, onto,
                                                         communities=settings.communities, files=settings.files),
                                          settings.communities.resolution, settings.communities.seed)  # fmt: skip
            write_communities(driver, settings.neo4j, comms,
                              communities=settings.communities, graph_settings=settings.graph)
            summarize_communities(driver, settings.neo4j, chat, ontology=onto, export=False, check=FactsCheck(),
                                  llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
            rows = run(driver, settings, questions, onto, chat, modes, progress=_print_row)
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    tot = totals(rows)
    model = getattr(chat, "model", None) or getattr(chat, "model_name", None)
    if model is None and settings.llm.provider == "llamacpp":
        model = f"llamacpp:{settings.llm.llamacpp_model}"
    meta = {"model": model or type(chat).__name__,
            "extraction": str(args.extraction), "questions": len(questions), "machine": args.machine,
            "context": context_note(settings.search)}  # fmt: skip
    write_report(args.out, rows, tot, meta)
    for group, t in tot.items():
        print(f"{group:<16} context recall {_pct(t['context_recall'])}  answer recall {_pct(t['answer_recall'])}  "
              f"citation precision {_pct(t['citation_precision'])} of {t['citations']}  strict "
              f"{_pct(t['strict_precision'])} of {t['strict_citations']} [{t['strict_unchecked']} unchecked]  claims "
              f"kept / left out {_left(t['claims_kept'], t['claims_left_out'])}  pasted shown {t['pasted_shown']} "
              f"(rewritten {t['rewritten']})  reports cited {t['reports_cited']} (added {t['covered']})  language "
              f"{t['in_question_language']} ({t['language_retries']} retried)  narrating {t['narrating']}  "
              f"calls {t['llm_calls']}  tokens {t['input_tokens']}/{t['output_tokens']}  {t['seconds']} s")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

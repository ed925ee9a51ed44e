"""The support check of a claims answer: a claim is shown only when the sources it cites back it.

A claims answer (:mod:`graphrag_got.search.claims`) is a list of statements, each with the ids of
the sources it rests on. The model fills the ids, and nothing in the format stops it from citing
the right fact under a wrong sentence (the demo's local answer stated five false meetings, each
citing the one fact about the true meeting). :func:`check_claims` checks every claim against its
cited sources, in code, and leaves out the ones that are not backed:

1. **Sources.** Ids that are not in the context are removed (counted as invented); a claim left with
   no source is left out (:attr:`SupportReason.NO_SOURCE`). Global answers must cite a community
   report (``required_kind="report"``).
2. **Entities.** The entities a claim names are found with the matcher that anchors questions
   (:func:`graphrag_got.search.anchors.match_entities`: keys and aliases of the graph, distinctive
   words, close spellings; ambiguous words are not entities; a distinctive word or close spelling the
   claim writes only in lower case is a common noun, not a name: "at war" names no event whose
   name starts with "War"; a word matched alone inside a longer capitalized name whose other words
   are not the entity's is another name: "Difference Engine" is not the graph's "Analytical Engine"). Each must
   occur in at least one cited
   source, else the claim is left out (:attr:`SupportReason.ENTITY_NOT_IN_SOURCES`). An entity occurs
   in a source when the source is about it (a fact's two ends, a report's members, a finding's
   members) or the same matcher finds it in the source's text (the fact line with its attributes,
   its evidence sentence, an excerpt, a report's summary, its findings).
3. **Relation.** A claim naming two or more entities states a relation between them: that is how the
   check tells a relation without any word of a language or corpus. Such a claim is backed only when
   one *place* of a cited source holds all of them together - a fact (its ends and the entities its
   attribute values name), the fact's evidence sentence, one sentence of a cited excerpt or report,
   or one report finding (its statement and members) - else it is left out
   (:attr:`SupportReason.RELATION_NOT_IN_SOURCES`). The evidence window is one sentence: two facts
   that share a name and stand in different sentences do not make a claim joining them.
   **Re-cited.** A claim naming two or more entities that its own ids do not back, but that one place
   of another source of the context holds together (all of its entities in one fact, sentence or
   finding: the same test), is kept with that source's id instead (the sources whose fact ends
   hold most of its entities, at most ``max_ids``, in context order), and the
   ids the model wrote are kept as ``KeptClaim.cited_as``: the model often writes a right statement
   under the id of the fact next to it. A claim naming one entity is not re-cited: any source about
   that entity would pass, and the check would then say little.
4. **Repeats.** Claims of the same template (the statement with its entity names taken out, compared
   with ``difflib``, ratio >= ``TEMPLATE_RATIO``) are one claim written twice when they cite the same
   sources with other names, or name the same entities. The best-backed of such a group is kept (the
   one a cited fact holds most of, as the fact's ends; the first on a tie); the others are left out
   (:attr:`SupportReason.REPEAT`).
5. **Ids.** A kept claim keeps at most ``max_ids`` ids: the sources holding all its entities in one
   place first, then those holding most of them. Cited sources holding none of its entities are
   removed too (:attr:`KeptClaim.removed_sources` lists every id removed).

A claim naming no entity of the graph cannot be checked beyond its sources (``basis="no entity"``):
it is kept and counted as such. What the check cannot see is a wrong relation between the right
entities ("A married B" cited to "A met B"): that needs the meaning of the words.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from graphrag_got.search.anchors import STOPWORDS, Match, MatchIndex, match_entities, normalize_words
from graphrag_got.search.citations import Citation, CitationKind, split_inline_ids

#: Most source ids a kept claim keeps (``settings.search.claim_max_sources`` sets it for answers).
MAX_IDS = 3
#: Two templates at least this similar (difflib ratio) are the same template.
TEMPLATE_RATIO = 0.9

_SENTENCE = re.compile(r"(?<=[.!?»])\s+|\n+")
_SLOT = "§"
_KIND_WORDS: dict[str, str] = {"fact": "fact", "chunk": "source excerpt", "report": "community report"}
_MATCHED = frozenset({"exact", "partial", "fuzzy"})


class SupportReason(str, Enum):
    """Why a claim was left out of an answer."""

    NO_SOURCE = "no_source"  # it cites no source of the context (or no report, in a global answer)
    ENTITY_NOT_IN_SOURCES = "entity_not_in_sources"  # it names an entity none of its sources mention
    RELATION_NOT_IN_SOURCES = "relation_not_in_sources"  # no place of its sources holds its entities together
    REPEAT = "repeat"  # a kept claim's template again: other names and the same sources, or the same names
    EMPTY = "empty"  # no statement
    PASTED_CONTEXT = "pasted_context"  # it pastes a context line and the pasted fact has no sentence to state it with
    NO_ENTITY = "no_entity"  # it names no entity of the graph, where an answer's claim must (extractive answers)


#: How each reason is written in a summary line ("3 entity not in its sources").
REASON_LABELS: dict[SupportReason, str] = {
    SupportReason.NO_SOURCE: "no source",
    SupportReason.ENTITY_NOT_IN_SOURCES: "entity not in its sources",
    SupportReason.RELATION_NOT_IN_SOURCES: "relation not in its sources",
    SupportReason.REPEAT: "repeat",
    SupportReason.EMPTY: "empty",
    SupportReason.PASTED_CONTEXT: "pasted context line",
    SupportReason.NO_ENTITY: "names no entity",
}


class ClaimLike(Protocol):
    statement: str
    sources: list[str]


class KeptClaim(BaseModel):
    """A claim shown in the answer, with what its check found."""

    statement: str
    sources: list[str] = Field(default_factory=list)  # the ids it keeps (at most max_ids)
    removed_sources: list[str] = Field(default_factory=list)  # cited ids removed: invented, unrelated, over the cap
    entities: list[str] = Field(default_factory=list)  # the graph entities it names
    basis: Literal["relation", "entity", "no entity"] = "no entity"  # what was checked (module docstring)
    cited_as: list[str] = Field(default_factory=list)  # re-cited: the ids the model wrote, which did not back it
    pasted: str | None = None  # rewritten: the statement as written, a pasted context line (now its fact's sentence)

    @property
    def recited(self) -> bool:
        return bool(self.cited_as)

    def recite_line(self) -> str:
        """``statement [F7] (cited F4, which does not state it)``."""
        cited = ", ".join(self.cited_as)
        return f"{self.statement} [{', '.join(self.sources)}] (cited {cited}, which {'do' if len(self.cited_as) > 1 else 'does'} not state it)"


class LeftOutClaim(BaseModel):
    """A claim left out of the answer, and why."""

    statement: str
    sources: list[str] = Field(default_factory=list)  # the ids it cited
    reason: SupportReason
    detail: str  # the reason in words: which entity, which sources, which claim it repeats
    entities: list[str] = Field(default_factory=list)

    def line(self) -> str:
        ids = f" [{', '.join(self.sources)}]" if self.sources else ""
        return f"{self.statement}{ids}: {self.detail}"


class SupportReport(BaseModel):
    """The check of one claims answer: the claims kept (in answer order) and the ones left out."""

    kept: list[KeptClaim] = Field(default_factory=list)
    left_out: list[LeftOutClaim] = Field(default_factory=list)
    invented: list[str] = Field(default_factory=list)  # cited ids that are not in the context (removed)

    def counts(self) -> dict[str, int]:
        """Left-out claims per reason (reason value -> count), in the enum's order."""
        out = {r.value: sum(1 for c in self.left_out if c.reason is r) for r in SupportReason}
        return {k: v for k, v in out.items() if v}

    def summary(self) -> str:
        """``2 claims kept (1 re-cited), 4 left out (3 entity not in its sources, 1 repeat)``."""
        return support_summary(len(self.kept), self.left_out, recited=sum(1 for c in self.kept if c.recited),
                               rewritten=self.rewritten)

    @property
    def rewritten(self) -> int:
        """Kept claims that pasted a context line and were stated from the pasted fact's sentence."""
        return sum(1 for c in self.kept if c.pasted is not None)

    @property
    def pasted(self) -> int:
        """Claims that pasted a context line: rewritten, or left out (:attr:`SupportReason.PASTED_CONTEXT`)."""
        return self.rewritten + sum(1 for c in self.left_out if c.reason is SupportReason.PASTED_CONTEXT)


def support_summary(kept: int, left_out: Sequence[LeftOutClaim], *, recited: int = 0, rewritten: int = 0) -> str:
    """One line: how many claims were kept (re-cited, rewritten from a pasted line), how many left out and why."""
    how = [f"{recited} re-cited"] * bool(recited) + [f"{rewritten} rewritten from a pasted context line"] * bool(rewritten)
    line = f"{kept} claim{'s' if kept != 1 else ''} kept" + (f" ({', '.join(how)})" if how else "")
    if not left_out:
        return f"{line}, none left out"
    counts = {r: sum(1 for c in left_out if c.reason is r) for r in SupportReason}
    why = ", ".join(f"{n} {REASON_LABELS[r]}" for r, n in counts.items() if n)
    return f"{line}, {len(left_out)} left out ({why})"


def check_lines(answer_format: str | None, kept: int, left_out: Sequence[LeftOutClaim], *,
                language_retry: bool = False, language: str | None = None,
                recited: Sequence[KeptClaim] = (), rewritten: Sequence[KeptClaim] = ()) -> list[str]:  # fmt: skip
    """The lines printed under an answer (CLI, demo): how many claims were kept and left out and why,
    each re-cited claim with the ids it had, each left-out claim with its reason, and a language
    retry. None for a result without an answer."""
    lines = []
    if answer_format == "claims":
        lines.append(f"claims: {support_summary(kept, left_out, recited=len(recited), rewritten=len(rewritten))}")
        if recited:
            lines.append("Re-cited (its own ids did not state it; the ids shown do):")
            lines += [f"  - {c.recite_line()}" for c in recited]
        if rewritten:
            lines.append("Rewritten (it pasted a context line; shown as the sentence of the fact it pasted):")
            lines += [f"  - {c.pasted} -> {c.statement} [{', '.join(c.sources)}]" for c in rewritten]
        if left_out:
            lines.append("Left out (not supported by its sources):")
            lines += [f"  - {c.line()}" for c in left_out]
    elif answer_format == "text":
        lines.append("claims: not checked (a prose answer; GRAPHRAG_ANSWER_FORMAT=claims checks every claim)")
    if language_retry:
        lines.append(f"(asked again once: the first answer was not in {language or 'the language of the question'})")
    return lines


# ---------------------------------------------------------------------------------------------
# What a source holds
# ---------------------------------------------------------------------------------------------


@dataclass
class _View:
    """A cited source as the check reads it: the entities it holds, and its places (the sets of
    entities one fact, sentence or finding holds together)."""

    occurs: set[str] = field(default_factory=set)
    places: list[frozenset[str]] = field(default_factory=list)
    ends: frozenset[str] = frozenset()  # a fact's two ends


class _Reader:
    """Finds entities in texts with the anchor matcher, once per text and source."""

    def __init__(self, index: MatchIndex) -> None:
        self.index = index
        self._texts: dict[str, frozenset[str]] = {}
        self._views: dict[str, _View] = {}

    def uids(self, text: str) -> frozenset[str]:
        if text not in self._texts:
            found = [m for m in match_entities(text, [], index=self.index) if m.how in _MATCHED]
            self._texts[text] = frozenset(u for m in found for u in m.uids)
        return self._texts[text]

    def names(self, names: Iterable[str]) -> frozenset[str]:
        """The uids of names given as entity names (a fact's ends, report members): by key or alias,
        else as the matcher reads them."""
        out: set[str] = set()
        for name in names:
            ents = self.index.keys.get(normalize_words(name))
            if ents:
                out.update(e["uid"] for e in ents)
            else:
                out.update(self.uids(name))
        return frozenset(out)

    def view(self, src: Citation) -> _View:
        if src.id in self._views:
            return self._views[src.id]
        v = _View()
        if src.kind == "fact":
            v.ends = self.names(src.entities)
            v.places.append(v.ends | self.uids(src.text))
            if src.evidence:
                v.places.append(v.ends | self.uids(src.evidence))
        else:
            v.places += [self.uids(s) for s in _SENTENCE.split(src.text) if s.strip()]
            v.places += [self.uids(f.statement) | self.names(f.members) for f in src.findings]
            v.occurs |= self.names(src.entities)
        for place in v.places:
            v.occurs |= place
        self._views[src.id] = v
        return v


# ---------------------------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------------------------


@dataclass
class _Named:
    """One entity a claim names: its candidates (a partial word may fit up to 3) and how it reads."""

    label: str
    uids: frozenset[str]
    term: str


@dataclass
class _Candidate:
    """A claim that passed the source, entity and relation checks (a repeat may still leave it out)."""

    number: int  # the claim's place in the model's answer, from 1
    cited: list[str]  # its known ids, as cited
    named: list[_Named]
    kept: KeptClaim
    template: str
    strength: int  # most of its entities one cited fact holds as its ends


def _common_word(m: Match, words: dict[str, list[str]]) -> bool:
    """Whether a partial or fuzzy match stands only on words the statement writes in lower case: a
    common noun that happens to open a name ("war" of "War of 1812"), not the name. Scripts
    without letter case are never judged so. Exact keys and aliases always name their entity."""
    if m.how == "exact":
        return False
    written = [w for term in m.term.split() for w in words.get(term, [])]
    return bool(written) and all(w[:1].islower() for w in written)


def _capitalized_runs(statement: str) -> list[list[str]]:
    """Runs of words the statement writes with a capital first letter, one space apart ("the Difference
    Engine of" -> ["Difference", "Engine"]): the proper names it writes. Scripts without letter case give none."""
    runs: list[list[str]] = []
    last_end = -2
    for m in re.finditer(r"\w+", statement):
        word = m.group()
        if not word[:1].isupper():
            last_end = -2
            continue
        if runs and statement[last_end:m.start()] == " ":
            runs[-1].append(word)
        else:
            runs.append([word])
        last_end = m.end()
    return runs


def _another_name(m: Match, runs: list[list[str]]) -> bool:
    """Whether a match on one word (partial or fuzzy) stands inside a longer proper name the statement
    writes whose other words are not words of the entity's name: "Difference Engine" is not
    "Analytical Engine", which shares only "Engine" with it; the claim names something the graph does
    not hold. Function words inside a name ("Bank of England") are not counted."""
    if m.how == "exact" or " " in m.term:
        return False
    own = {w for name in m.names for w in normalize_words(name).split()}
    for run in runs:
        words = [normalize_words(w) for w in run]
        if m.term in words:
            others = [w for w in words if w != m.term and w not in STOPWORDS]
            if any(w not in own for w in others):
                return True
    return False


def _named(statement: str, index: MatchIndex) -> list[_Named]:
    """The entities ``statement`` names, in the order it names them."""
    out: list[_Named] = []
    text = f" {normalize_words(statement)} "
    words: dict[str, list[str]] = {}
    for w in re.findall(r"\w+", statement):
        words.setdefault(normalize_words(w), []).append(w)

    def where(m: Match) -> int:
        at = text.find(f" {m.term} ")
        return at if at >= 0 else len(text)

    runs = _capitalized_runs(statement)
    for m in sorted(match_entities(statement, [], index=index), key=where):
        uids = frozenset(m.uids)
        if (m.how not in _MATCHED or not uids or any(n.uids == uids for n in out) or _common_word(m, words)
                or _another_name(m, runs)):
            continue
        label = m.names[0] if len(m.names) == 1 else f"{m.term} ({' / '.join(m.names)})"
        out.append(_Named(label, uids, m.term))
    return out


def named_uids(statement: str, index: MatchIndex) -> frozenset[str]:
    """The uids of the entities ``statement`` names, read as a claim is read (a distinctive word in
    lower case is a common noun; a word of another proper name is not the entity)."""
    return frozenset(u for n in _named(statement, index) for u in n.uids)


def _template(statement: str, named: Sequence[_Named]) -> str:
    text = f" {normalize_words(statement)} "
    for n in sorted(named, key=lambda n: -len(n.term)):
        text = text.replace(f" {n.term} ", f" {_SLOT} ")
    return " ".join(text.split())


def listing(names: Sequence[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``: names in a reason's words."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _check_one(number: int, statement: str, cited: list[str], by_id: dict[str, Citation], reader: _Reader,
               max_ids: int, required_kind: CitationKind | None) -> _Candidate | LeftOutClaim:  # fmt: skip
    named = _named(statement, reader.index)
    labels = [n.label for n in named]

    def out(reason: SupportReason, detail: str) -> LeftOutClaim:
        return LeftOutClaim(statement=statement, sources=cited, reason=reason, detail=detail, entities=labels)

    def together(v: _View) -> bool:
        return any(all(n.uids & place for n in named) for place in v.places)

    def recite(left: LeftOutClaim) -> _Candidate | LeftOutClaim:
        """Another source of the context that holds the claim's entities together (module docstring)."""
        if len(named) < 2:
            return left
        pool = [i for i, c in by_id.items() if required_kind is None or c.kind == required_kind]
        holders = [i for i in pool if together(reader.view(by_id[i]))]
        if not holders:
            return left
        ends = {i: sum(1 for n in named if n.uids & reader.view(by_id[i]).ends) for i in holders}
        best = max(ends.values())
        keep = [i for i in holders if ends[i] == best][:max_ids]  # the best-backed ones, in context order
        kept = KeptClaim(statement=statement, sources=keep, removed_sources=[i for i in cited if i not in keep],
                         entities=labels, basis="relation", cited_as=list(cited))
        return _Candidate(number, keep, named, kept, _template(statement, named), max(ends.values()))

    known = [i for i in cited if i in by_id]
    if not known:
        return recite(out(SupportReason.NO_SOURCE, "cites no source of its context"))
    if required_kind is not None and not any(by_id[i].kind == required_kind for i in known):
        return recite(out(SupportReason.NO_SOURCE, f"cites no {_KIND_WORDS[required_kind]} ({', '.join(known)})"))
    views = {i: reader.view(by_id[i]) for i in known}
    missing = [n.label for n in named if not any(n.uids & v.occurs for v in views.values())]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        return recite(out(SupportReason.ENTITY_NOT_IN_SOURCES,
                          f"{listing(missing)} {verb} in none of its sources ({', '.join(known)})"))
    if len(named) >= 2 and not any(together(v) for v in views.values()):
        return recite(out(SupportReason.RELATION_NOT_IN_SOURCES,
                          f"none of its sources ({', '.join(known)}) states {listing(labels)} together "
                          "(in one fact, sentence or finding)"))
    if named:  # the sources holding all its entities in one place first, then those holding most of them
        held = {i: sum(1 for n in named if n.uids & v.occurs) for i, v in views.items()}
        # a relation's source holds two of its entities at least: a source about one of them only is not its source
        least = 2 if len(named) >= 2 else 1
        ranked = sorted((i for i in known if together(views[i]) or held[i] >= least),
                        key=lambda i: (not together(views[i]), -held[i]))
    else:
        ranked = list(known)
    keep = ranked[:max_ids]
    if required_kind is not None and not any(by_id[i].kind == required_kind for i in keep):
        keep = [*keep[: max_ids - 1], next(i for i in [*ranked, *known] if by_id[i].kind == required_kind)]
    keep = [i for i in known if i in keep]  # in the order cited
    basis: Literal["relation", "entity", "no entity"] = (
        "relation" if len(named) >= 2 else "entity" if named else "no entity")
    kept = KeptClaim(statement=statement, sources=keep, removed_sources=[i for i in cited if i not in keep],
                     entities=labels, basis=basis)
    strength = max((sum(1 for n in named if n.uids & v.ends) for v in views.values()), default=0)
    return _Candidate(number, known, named, kept, _template(statement, named), strength)


#: The marker a fact's context line puts before its evidence sentence (``Citation.context_line``).
_EVIDENCE_MARK = re.compile(r"--\s*evidence\s*:", re.IGNORECASE)
#: A relation type as a fact line writes it: an upper-case word, with underscores or not.
_RELATION_WORD = re.compile(r"\b[^\W\d_a-z]{2,}(?:_[^\W_a-z]+)*\b")


def _relation_word(src: Citation) -> str | None:
    """The relation type a fact line writes between its two ends (``A RULES B`` -> ``RULES``)."""
    if src.kind != "fact" or len(src.entities) < 2 or not src.text.startswith(src.entities[0]):
        return None
    rest = src.text[len(src.entities[0]):]
    at = rest.find(src.entities[1])
    word = rest[:at].strip() if at > 0 else ""
    return word if word and _RELATION_WORD.fullmatch(word) and word == word.upper() else None


def pasted_source(statement: str, cited: Sequence[str], by_id: dict[str, Citation]) -> Citation | None | bool:
    """Whether ``statement`` pastes a context line instead of stating it: it writes a fact line's relation
    type in capitals between names, or the ``-- evidence:`` marker. Returns the fact it pastes (its cited
    ones first, then the others), True when it pastes a line whose fact cannot be told, False when it
    pastes nothing. Nothing of a language is read: relation types are the upper-case words between a
    fact line's two ends, taken from the context itself."""
    words = set(_RELATION_WORD.findall(statement))
    marked = bool(_EVIDENCE_MARK.search(statement))
    if not words and not marked:
        return False
    folded = statement.casefold()
    order = [*(i for i in cited if i in by_id), *(i for i in by_id if i not in cited)]
    best: Citation | None = None
    for i in order:
        src = by_id[i]
        word = _relation_word(src)
        if word is None or word not in words:
            continue
        named = sum(1 for name in src.entities[:2] if name.casefold() in folded)
        if named == 2:
            return src
        if named and best is None:
            best = src
    if best is not None:
        return best
    return True if marked or words & {w for s in by_id.values() if (w := _relation_word(s))} else False


def _repeats(a: _Candidate, b: _Candidate) -> bool:
    """Whether ``b`` writes ``a`` again: the same template with the same sources, or with the same names."""
    if difflib.SequenceMatcher(None, a.template, b.template).ratio() < TEMPLATE_RATIO:
        return False
    return set(a.cited) == set(b.cited) or {n.uids for n in a.named} == {n.uids for n in b.named}


def check_claims(claims: Sequence[ClaimLike], sources: Sequence[Citation], index: MatchIndex, *,
                 max_ids: int = MAX_IDS, required_kind: CitationKind | None = None,
                 require_entity: bool = False) -> SupportReport:  # fmt: skip
    """Check every claim against the sources it cites (see the module docstring).

    ``sources``: the numbered context the answer was given; ``index``: the graph's
    :class:`~graphrag_got.search.anchors.MatchIndex`; ``required_kind``: a kind of source every claim
    must cite (``"report"`` for global answers). Ids written inside a statement count as cited.
    ``require_entity``: a claim naming no entity of the graph is left out (:attr:`SupportReason.NO_ENTITY`)
    instead of kept unchecked (extractive answers: such a sentence states nothing of the answer)."""
    if max_ids < 1:
        raise ValueError(f"max_ids must be at least 1, got {max_ids}")
    by_id = {c.id: c for c in sources}
    reader = _Reader(index)
    report = SupportReport()
    kept: list[_Candidate] = []
    left: list[tuple[int, LeftOutClaim]] = []
    for number, claim in enumerate(claims, start=1):
        statement, inline = split_inline_ids(" ".join(str(claim.statement or "").split()))
        cited = list(dict.fromkeys([*(s.strip() for s in claim.sources or [] if s and s.strip()), *inline]))
        report.invented += [i for i in cited if i not in by_id and i not in report.invented]
        if not statement.strip(" .!?¿¡"):
            left.append((number, LeftOutClaim(statement=statement, sources=cited, reason=SupportReason.EMPTY,
                                              detail="the statement is empty")))  # fmt: skip
            continue
        pasted = pasted_source(statement, cited, by_id)
        written = statement
        if pasted is not False:  # a context line pasted: stated from its fact's sentence, or left out
            if not isinstance(pasted, Citation) or not pasted.evidence:
                what = f"its fact ({pasted.id}) has no sentence to state it with" if isinstance(pasted, Citation) \
                    else "which fact it pastes cannot be told"
                left.append((number, LeftOutClaim(statement=statement, sources=cited, reason=SupportReason.PASTED_CONTEXT,
                                                  detail=f"it pastes a line of the context; {what}")))  # fmt: skip
                continue
            statement, cited = " ".join(pasted.evidence.split()), [pasted.id]
        found = _check_one(number, statement, cited, by_id, reader, max_ids, required_kind)
        if not isinstance(found, LeftOutClaim) and written != statement:
            found.kept.pasted = written
        if require_entity and not isinstance(found, LeftOutClaim) and not found.named:
            found = LeftOutClaim(statement=statement, sources=cited, reason=SupportReason.NO_ENTITY,
                                 detail="it names no entity of the graph: nothing in it states the answer")
        if isinstance(found, LeftOutClaim):
            left.append((number, found))
            continue
        earlier = next((k for k in kept if _repeats(k, found)), None)
        if earlier is None:
            kept.append(found)
            continue
        loser, winner = (earlier, found) if found.strength > earlier.strength else (found, earlier)
        if loser is earlier:
            kept[kept.index(earlier)] = found
        same_names = {n.uids for n in loser.named} == {n.uids for n in winner.named}
        how = "the same names" if same_names else f"other names and the same sources ({', '.join(loser.cited)})"
        left.append((loser.number, LeftOutClaim(
            statement=loser.kept.statement, sources=loser.cited, reason=SupportReason.REPEAT,
            entities=loser.kept.entities, detail=f"repeats claim {winner.number} with {how}")))  # fmt: skip
    report.kept = [c.kept for c in sorted(kept, key=lambda c: c.number)]
    report.left_out = [c for _, c in sorted(left, key=lambda x: x[0])]
    return report


__all__ = ["MAX_IDS", "REASON_LABELS", "TEMPLATE_RATIO", "KeptClaim", "LeftOutClaim", "SupportReason",
           "SupportReport", "check_claims", "check_lines", "listing", "named_uids", "pasted_source", "support_summary"]  # fmt: skip

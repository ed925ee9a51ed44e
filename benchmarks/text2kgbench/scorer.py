"""Score extracted triples the way Text2KGBench does, plus a stricter domain/range check.

Text2KGBench (Mihindukulasooriya, Tiwari, Enguix, Lata; ISWC 2023 resource track; data CC BY-SA 4.0)
scores one ontology at a time, per test sentence, then averages over *all* ground-truth sentences:

* **precision / recall / F1** -- predicted triples whose relation is not among the sentence's gold
  relations (spaces in gold labels read as ``_``) are set aside first; the rest are compared with the
  gold triples as sets of strings ``sub+rel+obj``, lower-cased, with ``_`` and whitespace removed.
  A sentence with no kept predictions scores 0/0/0.
* **ontology conformance** -- share of the sentence's predicted triples (all of them, before that
  filter) whose relation label is one of the ontology's (spaces read as ``_``, case-sensitive);
  domain and range are *not* checked. 1.0 when there are no predictions.
  **relation hallucination** = 1 - conformance.
* **subject / object hallucination** -- share of predicted triples whose subject (object), tokenized,
  Porter-stemmed, joined and stripped of ``_``/whitespace, is not a substring of the sentence
  concatenated with the ontology's concept labels treated the same way. 0.0 when there are no
  predictions. (The benchmark also deletes the string ``01januari`` from entities, and appends the
  concept labels to the sentence without a separating space; both quirks are kept.)
* A ground-truth sentence with *no entry at all* in the predictions adds 0 to every metric (including
  conformance); pass an empty list for a sentence where the system found nothing.

Tokenization: the benchmark calls NLTK's ``word_tokenize``, whose default first splits sentences with
the downloadable punkt model. We call it with ``preserve_line=True``, which skips that step and needs
no data download (``PorterStemmer`` needs none either); everything is joined without spaces
afterwards, so the sentence split hardly matters. Over the 10 DBpedia-WebNLG ontologies here this
reproduces all 70 published Vicuna-13B averages to two decimals (largest unrounded difference 0.005,
i.e. the published rounding; see ``reproduce.py`` and ``results/reproduce.md``).

**Stricter measure (ours): domain/range conformance.** The benchmark gives no entity types, but its
gold triples do type their ends through the ontology: in a gold triple ``(s, r, o)``, ``s`` is of
r's domain and ``o`` of r's range (a datatype such as Date for literals). For each predicted triple
whose relation is in the ontology we check its domain against the subject's types and its range
against the object's types, where the types are those given with the prediction
(``sub_type``/``obj_type``, e.g. from our extractor) or else those inferred from the same sentence's
gold triples (entities matched case-insensitively, ignoring spaces, ``_``, punctuation, quotes and a
leading "the"). An end whose types are unknown, or a relation whose domain/range is unspecified, is
left out of that check. Type names are compared case- and separator-insensitively and our literal
classes (``LiteralDate``) count as their datatype (``Date``), so both the benchmark's labels and our
imported class names work. There is no class hierarchy in the benchmark, so a City where Place is
expected counts as a violation: this measure is strict on purpose.

Everything takes plain data: ``predictions`` maps a sentence id to a list of triples (lists/tuples
``(sub, rel, obj[, sub_type, obj_type])`` or dicts with ``sub``/``rel``/``obj`` or
``subject``/``relation``/``object`` and optional types), ``ground_truth`` maps a sentence id to
``{"sent": str, "triples": [...]}`` (as in the benchmark's ``*_ground_truth.jsonl``), and ``ontology``
is the benchmark's ontology JSON (``concepts``, ``relations``). Relation names must be the benchmark's
labels; :func:`to_benchmark_relations` maps our relationship types back with the importer's label map.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

try:
    from nltk.stem import PorterStemmer
    from nltk.tokenize import word_tokenize
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "The Text2KGBench scorer needs NLTK: pip install 'graphrag_got[bench]' (or pip install nltk)."
    ) from exc

METRICS = ("precision", "recall", "f1", "onto_conf", "sub_halluc", "rel_halluc", "obj_halluc")
_SEP = re.compile(r"(_|\s+)")
_STEMMER = PorterStemmer()
# Datatype names (lower case) that a relation range may use for literal values.
DATATYPES = frozenset({
    "string", "langstring", "text", "number", "integer", "int", "nonnegativeinteger",
    "positiveinteger", "float", "double", "decimal", "quantity", "date", "datetime", "time",
    "year", "gyear", "gyearmonth", "boolean", "url", "anyuri",
})


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Triple:
    sub: str
    rel: str
    obj: str
    sub_type: str | None = None
    obj_type: str | None = None


def as_triple(item: Any) -> Triple:
    """Accept a list/tuple ``(sub, rel, obj[, sub_type, obj_type])`` or a dict; return a :class:`Triple`."""
    if isinstance(item, Triple):
        return item
    if isinstance(item, Mapping):
        def pick(*keys: str) -> Any:
            for k in keys:
                if k in item:
                    return item[k]
            return None
        sub, rel, obj = pick("sub", "subject"), pick("rel", "relation"), pick("obj", "object")
        st, ot = pick("sub_type", "subject_type"), pick("obj_type", "object_type")
    elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) >= 3:
        sub, rel, obj = item[0], item[1], item[2]
        st = item[3] if len(item) > 3 else None
        ot = item[4] if len(item) > 4 else None
    else:
        raise ValueError(f"not a triple: {item!r} (expected [sub, rel, obj] or a dict with sub/rel/obj)")
    if not all(isinstance(x, str) for x in (sub, rel, obj)):
        raise ValueError(f"triple ends must be strings: {item!r}")
    return Triple(sub, rel, obj, st or None, ot or None)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_ground_truth(path: str | Path) -> dict[str, dict[str, Any]]:
    """``{id: {"sent": str, "triples": [Triple]}}`` from a ``*_ground_truth.jsonl`` file."""
    return {r["id"]: {"sent": r["sent"], "triples": [as_triple(t) for t in r["triples"]]} for r in read_jsonl(path)}


def load_predictions(path: str | Path) -> dict[str, list[Triple]]:
    """``{id: [Triple]}`` from a file of ``{"id", "triples": [[s, r, o], ...]}`` lines (e.g. the Vicuna responses)."""
    return {r["id"]: [as_triple(t) for t in r.get("triples") or []] for r in read_jsonl(path)}


def load_ontology(path: str | Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def to_benchmark_relations(triples: Iterable[Any], label_map: Mapping[str, Any]) -> list[Triple]:
    """Rename our relationship types (``BIRTH_DATE``) back to the benchmark labels (``birthDate``).

    ``label_map`` is the importer's map (``{"relations": {label: TYPE}, ...}``) or just its
    ``relations`` part. Names not in the map are kept, so they count as non-conformant.
    """
    rels = label_map.get("relations", label_map)
    back = {ours: label for label, ours in rels.items()}
    out = []
    for t in triples:
        t = as_triple(t)
        out.append(Triple(t.sub, back.get(t.rel, t.rel), t.obj, t.sub_type, t.obj_type))
    return out


# ----------------------------------------------------------------------------- normalization
def normalize_entity_key(label: str) -> str:
    """The benchmark's triple-comparison normalization: drop ``_`` and whitespace, lower-case."""
    return _SEP.sub("", label).lower()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stem(word)


def stemmed_key(text: str) -> str:
    """Tokenize, Porter-stem, join without spaces, drop ``_``/whitespace, lower-case (benchmark hallucination key)."""
    joined = "".join(_stem(w) for w in word_tokenize(text, preserve_line=True))
    return _SEP.sub("", joined).lower()


def triple_key(t: Triple) -> str:
    """The benchmark's comparison string for a triple: the three normalized parts concatenated."""
    return normalize_entity_key(t.sub) + normalize_entity_key(t.rel) + normalize_entity_key(t.obj)


def typing_key(label: str) -> str:
    """Looser key used only to find an entity's gold types: also ignores quotes, punctuation and a leading "the"."""
    return re.sub(r"[^0-9a-z]", "", re.sub(r"^\s*the\s+", "", label.strip().strip('"').lower()))


def _entity_stem_key(label: str) -> str:
    return stemmed_key(label).replace("01januari", "")


def _type_key(name: str | None) -> str | None:
    """Comparable form of a class or datatype name; ``LiteralDate`` and ``date`` both give ``date``."""
    if name is None:
        return None
    key = re.sub(r"[^0-9a-z]", "", name.strip().lower().removeprefix("xsd:"))
    if not key:
        return None
    if key.startswith("literal") and key[len("literal"):] in DATATYPES:
        key = key[len("literal"):]
    return key


# ----------------------------------------------------------------------------- per-sentence scores
def precision_recall_f1(gold: set[str], pred: set[str]) -> tuple[float, float, float]:
    if not pred:
        return 0.0, 0.0, 0.0
    hit = len(gold & pred)
    p = hit / len(pred)
    r = hit / len(gold) if gold else 0.0
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f1


@dataclass
class SentenceScore:
    id: str
    precision: float
    recall: float
    f1: float
    onto_conf: float
    rel_halluc: float
    sub_halluc: float
    obj_halluc: float
    n_pred: int
    n_kept: int
    n_conformant: int
    # domain/range check counts for this sentence (see module docstring)
    domain_checked: int = 0
    domain_ok: int = 0
    range_checked: int = 0
    range_ok: int = 0
    both_checked: int = 0
    both_ok: int = 0
    violations: list[dict[str, Any]] = field(default_factory=list)


class OntologyIndex:
    """What the scorer needs from a benchmark ontology: relation labels, their domain/range keys, concept labels."""

    def __init__(self, ontology: Mapping[str, Any]):
        concepts = ontology.get("concepts") or []
        by_qid = {str(c.get("qid")): str(c.get("label", c.get("qid"))) for c in concepts if c.get("qid")}
        self.concept_labels = [str(c["label"]) for c in concepts if "label" in c]
        self.relation_labels: set[str] = set()
        self.domain: dict[str, set[str] | None] = {}
        self.range: dict[str, set[str] | None] = {}
        for r in ontology.get("relations") or []:
            label = str(r.get("label", r.get("pid"))).replace(" ", "_")
            self.relation_labels.add(label)
            for attr, ref in (("domain", r.get("domain")), ("range", r.get("range"))):
                key = _type_key(by_qid.get(str(ref), str(ref)) if ref else None)
                table = getattr(self, attr)
                if key is None:
                    table[label] = None  # unspecified: never checked
                elif table.get(label, set()) is not None:
                    table.setdefault(label, set()).add(key)
        self.concept_stem_suffix = " ".join(self.concept_labels)


def _gold_types(gold: Sequence[Triple], onto: OntologyIndex) -> dict[str, set[str]]:
    types: dict[str, set[str]] = {}
    for t in gold:
        rel = t.rel.replace(" ", "_")
        for end, table in ((t.sub, onto.domain), (t.obj, onto.range)):
            keys = table.get(rel)
            if keys:
                types.setdefault(typing_key(end), set()).update(keys)
    return types


def score_sentence(sent_id: str, sentence: str, gold: Sequence[Any], predicted: Sequence[Any],
                   onto: OntologyIndex) -> SentenceScore:
    gold_t = [as_triple(t) for t in gold]
    pred_t = [as_triple(t) for t in predicted]

    gold_rels = {t.rel.replace(" ", "_") for t in gold_t}
    kept = [t for t in pred_t if t.rel in gold_rels]
    p, r, f1 = precision_recall_f1({triple_key(t) for t in gold_t}, {triple_key(t) for t in kept})

    n_conf = sum(t.rel in onto.relation_labels for t in pred_t)
    if pred_t:
        conf = n_conf / len(pred_t)
        context = stemmed_key(sentence + onto.concept_stem_suffix)
        sub_h = sum(_entity_stem_key(t.sub) not in context for t in pred_t) / len(pred_t)
        obj_h = sum(_entity_stem_key(t.obj) not in context for t in pred_t) / len(pred_t)
    else:
        conf, sub_h, obj_h = 1.0, 0.0, 0.0

    s = SentenceScore(sent_id, p, r, f1, conf, 1 - conf, sub_h, obj_h, len(pred_t), len(kept), n_conf)

    gold_types = _gold_types(gold_t, onto)
    for t in pred_t:
        if t.rel not in onto.relation_labels:
            continue
        st = {_type_key(t.sub_type)} if t.sub_type else gold_types.get(typing_key(t.sub), set())
        ot = {_type_key(t.obj_type)} if t.obj_type else gold_types.get(typing_key(t.obj), set())
        dom, rng = onto.domain.get(t.rel), onto.range.get(t.rel)
        d_ok = r_ok = None
        if dom and st:
            d_ok = bool(dom & st)
            s.domain_checked += 1
            s.domain_ok += d_ok
        if rng and ot:
            r_ok = bool(rng & ot)
            s.range_checked += 1
            s.range_ok += r_ok
        if d_ok is not None and r_ok is not None:
            s.both_checked += 1
            s.both_ok += d_ok and r_ok
        if d_ok is False or r_ok is False:
            s.violations.append({"triple": [t.sub, t.rel, t.obj], "domain_ok": d_ok, "range_ok": r_ok,
                                 "subject_types": sorted(st), "object_types": sorted(ot),
                                 "domain": sorted(dom or []), "range": sorted(rng or [])})
    return s


# ----------------------------------------------------------------------------- per-ontology scores
@dataclass
class OntologyScore:
    n_sentences: int
    averages: dict[str, float]          # benchmark metrics, unrounded, averaged over all gold sentences
    domain_range: dict[str, Any]        # our stricter measure, micro-averaged over checked triples
    sentences: list[SentenceScore]

    def published_format(self) -> dict[str, str]:
        """The averages as the benchmark prints them (``avg_<metric>``, two decimals)."""
        return {f"avg_{m}": f"{v:.2f}" for m, v in self.averages.items()}

    def to_dict(self) -> dict[str, Any]:
        return {"n_sentences": self.n_sentences, "averages": self.averages, "domain_range": self.domain_range,
                "sentences": [asdict(s) for s in self.sentences]}


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def score(predictions: Mapping[str, Sequence[Any]], ground_truth: Mapping[str, Mapping[str, Any]],
          ontology: Mapping[str, Any] | OntologyIndex) -> OntologyScore:
    """Score one ontology's predictions. See the module docstring for the metrics and input shapes."""
    onto = ontology if isinstance(ontology, OntologyIndex) else OntologyIndex(ontology)
    scored: list[SentenceScore] = []
    for sid, gt in ground_truth.items():
        if sid not in predictions:
            continue  # benchmark rule: counts as zero on every metric (the divisor below is all gold sentences)
        scored.append(score_sentence(sid, gt["sent"], gt["triples"], predictions[sid], onto))
    n = len(ground_truth)
    averages = {m: (sum(getattr(s, m) for s in scored) / n if n else 0.0) for m in METRICS}
    tot = {k: sum(getattr(s, k) for s in scored)
           for k in ("domain_checked", "domain_ok", "range_checked", "range_ok", "both_checked", "both_ok")}
    conformant = sum(s.n_conformant for s in scored)
    domain_range = {
        **tot,
        "conformant_triples": conformant,
        "domain_conformance": _ratio(tot["domain_ok"], tot["domain_checked"]),
        "range_conformance": _ratio(tot["range_ok"], tot["range_checked"]),
        "domain_range_conformance": _ratio(tot["both_ok"], tot["both_checked"]),
        "typed_coverage": _ratio(tot["both_checked"], conformant),
    }
    return OntologyScore(n, averages, domain_range, scored)


def score_files(predictions_path: str | Path, ground_truth_path: str | Path,
                ontology_path: str | Path) -> OntologyScore:
    """Score a predictions JSONL file against a ground-truth JSONL file and a benchmark ontology file."""
    return score(load_predictions(predictions_path), load_ground_truth(ground_truth_path),
                 load_ontology(ontology_path))

"""Prompts: built from the ontology and the language only, versioned, free of corpus words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from graphrag_got import prompts

from graphrag_got.communities import reports as communities
from graphrag_got.cli import main
from graphrag_got.errors import GraphragGotError, SearchError
from graphrag_got.ontology.model import Ontology
from graphrag_got.search import anchors, global_, local
from graphrag_got.search.anchors import load_stopwords, match_entities

ROOT = Path(__file__).resolve().parent.parent
GOT = ROOT / "ontology" / "got.json"
CORPUS = ROOT / "corpus" / "got.txt"

#: Words the library once carried from the example corpus; none may come back from library text.
CORPUS_PHRASES = ("casa stark", "boda roja", "jon snow", "daenerys", "juego de tronos", "spanish corpus",
                  "faction", "house", "betrayal", "marriage", "story")

PLAIN = {
    "name": "Library",
    "classes": {"Book": {"comment": "a published book"}, "Author": {"properties": {"born": "string"}}},
    "relations": [{"name": "WROTE", "domain": "Author", "range": "Book", "comment": "authorship"}],
}


def _got() -> Ontology:
    return Ontology.from_file(GOT)


def _got_without_examples() -> Ontology:
    data = json.loads(GOT.read_text(encoding="utf-8"))
    del data["ejemplos"]
    return Ontology.from_dict(data)


def _example_texts(onto: Ontology) -> list[str]:
    """What the ontology's annotated examples put into the prompt (their texts and answers): user content."""
    out = []
    for ex in onto.examples:
        out += [ex.text.strip(), json.dumps(prompts.example_answer(onto, ex), ensure_ascii=False)]
    return out


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _library_words(onto: Ontology) -> set[str]:
    """Words of the extraction prompt that do not come from the ontology (what the library adds)."""
    user = _words(onto.describe()).union(*(_words(t) for t in _example_texts(onto)))
    return _words(prompts.extraction_system_prompt(onto)) - user


def _library_text(onto: Ontology) -> str:
    """The extraction prompt without the ontology's own description and attribute texts."""
    text = prompts.extraction_system_prompt(onto).replace(onto.describe(), "")
    for part in _example_texts(onto):
        text = text.replace(part, "")
    for spec in onto.relation_attributes.values():
        for part in (spec.comment, getattr(spec, "hint", "")):
            if part.strip():
                text = text.replace(part.strip().rstrip("."), "")
    return text


def _corpus_proper_nouns() -> set[str]:
    """Capitalized words of the example corpus that are not sentence starts: names of its world."""
    text = CORPUS.read_text(encoding="utf-8")
    return {m.group(1).lower() for m in re.finditer(r"(?<=[a-záéíóúñ,;] )([A-ZÁÉÍÓÚÑ][a-záéíóúñ]{3,})", text)}


def _all_library_prompts() -> dict[str, str]:
    return {
        "extraction": _library_text(_got()),
        "extraction_user": prompts.extraction_user_prompt("<chunk>"),
        "community": prompts.community_summary_prompt(),
        "anchor": prompts.anchor_prompt(),
        "local_answer": prompts.local_answer_prompt(),
        "map": prompts.map_prompt(),
        "reduce": prompts.reduce_prompt(),
    }


# ------------------------------------------------------------------------------- extraction


def test_cli_show_prompt_prints_the_exact_system_prompt_and_its_version(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["ontology", "show", "--prompt", str(GOT)]) == 0
    out = capsys.readouterr().out
    expected = prompts.extraction_system_prompt(_got())
    assert out == f"{expected}\nprompt version: {prompts.EXTRACTION_VERSION}\n"
    assert prompts.EXTRACTION_VERSION == "extract-v4"  # v2 reworded v1; v3 asks a confidence; v4 examples


def test_cli_show_without_prompt_flag_prints_no_version(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["ontology", "show", str(GOT)]) == 0
    out = capsys.readouterr().out
    assert "prompt version" not in out and "RULES" not in out


def test_got_prompt_keeps_its_content() -> None:
    onto = _got_without_examples()
    system = prompts.extraction_system_prompt(onto)
    assert onto.describe() in system  # classes, properties, relations, attributes, description
    assert onto.description and onto.description in system  # the domain hint
    rules = system.split("RULES\n", 1)[1].split("\n\nFORMAT EXAMPLE", 1)[0]
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", rules, flags=re.M)]
    assert numbers == list(range(1, 9))
    momento = onto.relation_attributes["momento"]
    guidance = "; ".join(t.strip().rstrip(".") for t in (momento.comment, momento.hint) if t.strip())
    rule = f'Fill "momento" when the text gives it for that fact ({guidance}); otherwise leave it null.'
    assert f"\n5. {rule}\n" in rules  # generated from the attribute, guidance from the ontology
    example = json.loads(system.rsplit("\n", 1)[1])
    first = onto.relations[0]
    assert example["relations"] == [{"relation": first.name, "subject": "<name from the text>",
                                     "subject_type": first.domain[0], "object": "<name from the text>",
                                     "object_type": first.range[0], "momento": None}]  # fmt: skip
    assert [e["type"] for e in example["entities"]] == [first.domain[0], first.range[0]]


def test_got_prompt_adds_no_corpus_words() -> None:
    library = _library_text(_got()).lower()
    for phrase in CORPUS_PHRASES:
        assert phrase not in library, phrase
    names = _corpus_proper_nouns()
    assert {"stark", "lannister"} <= names  # the detector does see the corpus' names
    assert not names & _library_words(_got())


def test_ontology_without_attributes_gets_no_attribute_rule() -> None:
    onto = Ontology.from_dict(PLAIN)
    assert onto.relation_attributes == {}
    system = prompts.extraction_system_prompt(onto)
    assert "Fill " not in system and "null" not in system
    assert "RELATION ATTRIBUTES" not in system
    rules = system.split("RULES\n", 1)[1].split("\n\nFORMAT EXAMPLE", 1)[0]
    assert [int(n) for n in re.findall(r"^(\d+)\. ", rules, flags=re.M)] == list(range(1, 8))
    example = json.loads(system.rsplit("\n", 1)[1])
    assert set(example["relations"][0]) == {"relation", "subject", "subject_type", "object", "object_type"}
    assert example["relations"][0]["relation"] == "WROTE"
    assert [e["type"] for e in example["entities"]] == ["Author", "Book"]


def test_attribute_rules_come_from_the_ontology() -> None:
    data = dict(PLAIN, relation_attributes={
        "year": {"type": "string", "comment": "the year the fact happens, as written"},
        "certainty": "enum: stated | implied, required",
    })  # fmt: skip
    onto = Ontology.from_dict(data)
    system = prompts.extraction_system_prompt(onto)
    assert ('Fill "year" when the text gives it for that fact (the year the fact happens, as written); '
            "otherwise leave it null.") in system
    assert 'Fill "certainty" with one of: stated, implied on every relation, as the text gives it.' in system
    example = json.loads(system.rsplit("\n", 1)[1])["relations"][0]
    assert example["year"] is None and example["certainty"] == "<one of: stated | implied>"
    rules = system.split("RULES\n", 1)[1].split("\n\nFORMAT EXAMPLE", 1)[0]
    assert [int(n) for n in re.findall(r"^(\d+)\. ", rules, flags=re.M)] == list(range(1, 10))


def test_attribute_hint_written_in_the_spec_reaches_its_rule() -> None:
    onto = Ontology.from_dict(dict(PLAIN, relation_attributes={"place": "string opcional, where it happens"}))
    assert 'Fill "place" when the text gives it for that fact (where it happens); otherwise leave it null.' in (
        prompts.extraction_system_prompt(onto))


def test_system_prompt_does_not_depend_on_a_chunk() -> None:
    onto = _got()
    first, second = "Ada met Charles in London.", "The ship left the harbour at dawn."
    system = prompts.extraction_system_prompt(onto)
    assert system == prompts.extraction_system_prompt(Ontology.from_file(GOT))  # a stable shared prefix
    assert first not in system and second not in system
    user_a, user_b = prompts.extraction_user_prompt(first), prompts.extraction_user_prompt(second)
    assert first in user_a and second in user_b and user_a != user_b
    assert onto.describe() not in user_a  # nothing of the ontology is repeated per chunk


def test_prompt_follows_ontology_edits() -> None:
    data = json.loads(GOT.read_text(encoding="utf-8"))
    data["relaciones"][0]["comment"] = "A brand new comment."
    assert "A brand new comment." in prompts.extraction_system_prompt(Ontology.from_dict(data))
    assert "A brand new comment." not in prompts.extraction_system_prompt(_got())


# ------------------------------------------------------------------------------- other prompts


def test_no_prompt_carries_corpus_words() -> None:
    names = _corpus_proper_nouns()
    for name, text in _all_library_prompts().items():
        low = text.lower()
        assert not [p for p in CORPUS_PHRASES if p in low], name
        assert not names & (_library_words(_got()) if name == "extraction" else _words(low)), name


@pytest.mark.parametrize("build", [prompts.local_answer_prompt, prompts.reduce_prompt, prompts.map_prompt])
def test_answers_follow_the_question_unless_a_language_is_forced(build) -> None:  # type: ignore[no-untyped-def]
    default = build()
    assert "in the language of the question" in default.lower()
    forced = build("English")
    assert "in english" in forced.lower() and "language of the question" not in forced.lower()
    assert build(None) == default and build("  ") == default


def test_summaries_follow_the_content_unless_a_language_is_forced() -> None:
    default = prompts.community_summary_prompt()
    assert "language of the community's content" in default
    forced = prompts.community_summary_prompt("German")
    assert "Write in German." in forced and "community's content" not in forced
    assert communities.SYSTEM_PROMPT == default


def test_anchor_prompt_lists_the_ontology_classes() -> None:
    onto = _got()
    text = prompts.anchor_prompt(list(onto.classes))
    assert all(c in text for c in onto.classes)
    assert "kinds" not in prompts.anchor_prompt()
    assert anchors.ANCHOR_PROMPT == prompts.anchor_prompt()


def test_module_constants_are_the_default_prompts() -> None:
    assert local.ANSWER_PROMPT == prompts.local_answer_prompt()
    assert global_.MAP_PROMPT == prompts.map_prompt()
    assert global_.REDUCE_PROMPT == prompts.reduce_prompt()


# ------------------------------------------------------------------------------- versions


def test_versions_are_distinct_and_used_in_cache_keys() -> None:
    assert len(set(prompts.VERSIONS.values())) == len(prompts.VERSIONS)
    assert prompts.VERSIONS["extraction"] == prompts.EXTRACTION_VERSION
    assert communities.PROMPT_VERSION == prompts.COMMUNITY_SUMMARY_VERSION == prompts.VERSIONS["community_summary"]
    assert communities.PROMPT_VERSION != "community-v2"  # the summary wording changed
    default = communities.summary_key("content", "model")
    assert communities.summary_key("content", "model", None) == default
    assert communities.summary_key("content", "model", "English") != default
    assert communities.summary_key("content", "model", "English") != communities.summary_key("content", "model", "German")


# ------------------------------------------------------------------------------- stopwords


def test_stopwords_are_per_language_files() -> None:
    en, es = load_stopwords(["en"]), load_stopwords(["es"])
    assert {"where", "between"} <= en and {"donde", "conocieron"} <= es
    assert not en & {"donde", "conocieron"}
    assert anchors.STOPWORDS == en | es
    assert all(w == w.lower() and " " not in w and not w.startswith("#") for w in anchors.STOPWORDS)


def test_unknown_stopword_language_is_a_clear_error() -> None:
    with pytest.raises(SearchError, match=r"no stopword list for language 'xx'; shipped: en, es") as info:
        load_stopwords(["xx"])
    assert isinstance(info.value, GraphragGotError)


def test_stopwords_never_anchor_alone() -> None:
    catalog = [{"uid": "Place|between rivers", "key": "between rivers", "name": "Between Rivers", "type": "Place"}]
    assert match_entities("between", catalog) == []  # first word of a key, but a function word
    found = match_entities("rivers", catalog)
    assert [(m.how, m.uids) for m in found] == [("partial", ["Place|between rivers"])]


def test_extraction_asks_a_confidence_per_entity_and_the_schema_bounds_it() -> None:
    from graphrag_got.ontology.schema import extraction_schema

    onto = _got()
    system = prompts.extraction_system_prompt(onto)
    assert '"confidence" from 0 to 1' in system
    example = prompts.extraction_example(onto)
    assert all(0 <= e["confidence"] <= 1 for e in example["entities"])
    schema = extraction_schema(onto)
    entity = schema["properties"]["entities"]["items"]["oneOf"][0]
    conf = entity["properties"]["confidence"]
    assert "confidence" not in entity.get("required", [])  # optional: answers without it stay valid
    bounds = next(alt for alt in conf["anyOf"] if alt.get("type") == "number")
    assert bounds["minimum"] == 0 and bounds["maximum"] == 1

"""The terms extraction strategy (GRAPHRAG_EXTRACTION=terms): key terms found without a model, the terms
several notes share typed once per term in batched calls, untyped terms as ``Term`` entities.

A scripted chat stands in for the model: it answers a typing call with the class a fixed table gives each
numbered term ("none" for the others) and counts its calls and the terms it was asked, so a test fails on
a term typed twice. One test loads the result into the real Neo4j of the test session."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graphrag_got.config import Settings
from graphrag_got.errors import LLMError, OntologyError
from graphrag_got.extract.extraction import Extraction
from graphrag_got.extract.run import extraction_plan, run_extraction
from graphrag_got.extract.terms.find import TermSource, find_terms
from graphrag_got.extract.terms.layer import common_words, trimmed
from graphrag_got.extract.terms.type_terms import read_types, type_grammar, type_schema
from graphrag_got.extract.validate import Validator
from graphrag_got.ontology.model import TERM_CLASS, Ontology

from test_classify import ONTOLOGY

CLASSES = {"Orla Venn": "Person", "Tassow": "Town", "Lantern Guild": "Guild", "Bram Oduya": "Person"}
_TERM_LINE = re.compile(r"^(\d+)\. (.+?) \| ", re.MULTILINE)

NOTES = {
    "guilds/lantern.md": "# Lantern Guild\n\nOrla Venn joined the Lantern Guild of Tassow as an apprentice.\n\n"
                         "## Hall\n\nThe guild keeps its hall in Tassow, next to the [[salt]] warehouse. Run "
                         "`lantern --light` at dusk.\n",
    "guilds/salt.md": "# Salt\n\nThe Salt Guild trades over Marrow Pass every spring.\n",
    "people.md": "# People\n\nBram Oduya taught Orla Venn the trade in Tassow.\n\n## quiet\n\n"
                 "nothing here is named at all, only plain lower-case words of no import.\n",
}


class TypingChat(BaseChatModel):
    """Typing calls answered from CLASSES ("none" for other terms); counts calls and the terms asked."""

    calls: int = 0
    asked: list[str] = []
    down: bool = False

    @property
    def _llm_type(self) -> str:
        return "terms-script"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        if self.down:
            raise LLMError("the scripted provider is down")
        system, user = str(messages[0].content), str(messages[-1].content)
        assert system.startswith("You read key terms of notes"), system[:80]
        self.calls += 1
        lines = []
        for number, term in _TERM_LINE.findall(user):
            self.asked.append(term)
            lines.append(f"{number}. {term} ({CLASSES.get(term, 'none')})")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="\n".join(lines)))])


def _vault(root: Path, notes: dict[str, str] = NOTES) -> Path:
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _settings(tmp: Path, **kw: Any) -> Settings:
    return Settings(**{"home": tmp / "home", "out_dir": tmp / "out", "extraction": "terms", "term_typing": True, **kw})


def _onto() -> Ontology:
    return Ontology.from_dict(ONTOLOGY, source="<guilds>")


def _extract(settings: Settings, vault: Path, chat: BaseChatModel) -> Any:
    return run_extraction(settings.extract, _onto(), vault, chat=chat, files=settings.files,
                          chunking=settings.chunking, llm=settings.llm)


def _types(out: Path) -> dict[str, str]:
    return {e.name: e.type for e in Extraction.read(out).entities}


def test_terms_are_what_the_text_marks_and_its_names() -> None:
    text = ("Orla Venn keeps [[Lantern Guild|the guild]] notes and ![[map.png]] in [[people/Bram Oduya#Early years]].\n"
            "- Select the hall, then run `lantern --light` or `{{x}}`.\nOrla Venn's lamp is in the Tassow Hall.\n")
    found = find_terms(text, heading="## Lantern Guild", max_terms=12)
    names = {t.name: t.source for t in found}
    assert names["Lantern Guild"] is TermSource.LINK and names["Bram Oduya"] is TermSource.LINK
    assert names["lantern --light"] is TermSource.CODE and "{{x}}" not in names and "map.png" not in names
    assert names["Orla Venn"] is TermSource.NAME and names["Tassow Hall"] is TermSource.NAME
    assert "Select" not in names  # a capital that begins a list item is no name
    assert "Hall" not in names and "Orla Venn's" not in names  # the longest name only, no possessive
    assert all(t.name.lower() in text.lower() for t in found)  # every term is written in the chunk
    assert [t.name for t in find_terms(text, max_terms=2)] == ["Lantern Guild", "Bram Oduya"]  # links first
    assert find_terms("### How do I move a vault to another folder", heading="How do I move a vault to another "
                      "folder") == []  # a heading that is a sentence is no term


def test_common_words_before_a_name_are_dropped_against_the_corpus() -> None:
    texts = ["Close the door. close it again, close everything.", "Close Tassow and Orla Venn."]
    common = common_words(texts)
    assert "close" in common and "tassow" not in common
    found = find_terms(texts[1])
    assert {t.name for t in trimmed(found, common)} == {"Tassow", "Orla Venn"}


def test_the_typing_answer_is_read_by_number_under_a_grammar_that_writes_each_term() -> None:
    grammar = type_grammar(["Orla Venn", 'a "b"'], ["Person", "Town"])
    assert '"1. Orla Venn ("' in grammar and '"2. a \\"b\\" ("' in grammar and '"none"' in grammar
    assert read_types("1. Orla Venn (Person)\n2. Tassow (none)\n3. x (Kingdom)\n", 3, ["Person", "Town"]) == \
        ["Person", None, None]
    assert read_types(json.dumps({"2": "Town", "1": "none"}), 2, ["Person", "Town"]) == [None, "Town"]
    assert type_schema(2, ["Person"])["required"] == ["1", "2"]
    with pytest.raises(ValueError):
        read_types("I cannot tell.", 2, ["Person"])


def test_term_is_an_entity_class_only_for_the_terms_strategy() -> None:
    raw = {"name": "Tassow", "type": TERM_CLASS}
    assert Validator(_onto()).check_entity(raw)[0] is None
    record, refused = Validator(_onto(), terms=True).check_entity(raw)
    assert record is not None and record.type == TERM_CLASS and not refused
    bad = Validator(_onto(), terms=True).check_entity({**raw, "rank": "high"})[1]
    assert [r.reason.value for r in bad] == ["unknown_property"]
    with pytest.raises(OntologyError, match="'Term' is reserved"):
        Ontology.from_dict({**ONTOLOGY, "classes": {**ONTOLOGY["classes"], TERM_CLASS: {}}}, source="<x>")


def test_shared_terms_are_typed_once_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    settings = _settings(tmp_path)
    assert extraction_plan(settings.extract, _onto(), vault, files=settings.files, chunking=settings.chunking,
                           llm=settings.llm) == (5, 0)  # no chunk needs a model call
    chat = TypingChat()
    first = _extract(settings, vault, chat)
    # shared by two notes: Orla Venn, Tassow, salt (a link and a heading); one call types them all
    assert chat.calls == 1 and sorted(chat.asked) == ["Orla Venn", "Tassow", "salt"]
    types = _types(first.out_path)
    assert types["Orla Venn"] == "Person" and types["Tassow"] == "Town"
    assert types["Lantern Guild"] == TERM_CLASS and types["lantern --light"] == TERM_CLASS  # one note only
    assert types.get("Salt", types.get("salt")) == TERM_CLASS  # answered "none"
    assert first.llm_calls == 1 and first.cache_hits == 0
    assert first.terms and "typed by the ontology's classes" in first.terms
    assert first.terms.endswith("notes: 2 with typed terms, 3 with untyped terms, 0 with typed relations")
    again = _extract(settings, vault, chat)
    assert chat.calls == 1 and again.llm_calls == 0 and again.unchanged
    # a new note makes Lantern Guild shared: it alone is asked, and the notes read before are not read again
    _vault(vault, {"guilds/new.md": "# New\n\nThe Lantern Guild opened a second hall.\n"})
    third = _extract(settings, vault, chat)
    assert chat.calls == 2 and chat.asked[3:] == ["Lantern Guild"] and third.cache_hits == 5
    assert _types(third.out_path)["Lantern Guild"] == "Guild"


def test_without_typing_no_model_is_asked_and_every_term_is_untyped(tmp_path: Path) -> None:
    assert Settings().extract.term_typing is False  # the default: typing is asked for
    vault = _vault(tmp_path / "vault")
    chat = TypingChat(down=True)
    summary = _extract(_settings(tmp_path, term_typing=False), vault, chat)
    assert chat.calls == 0 and summary.llm_calls == 0
    assert set(_types(summary.out_path).values()) == {TERM_CLASS}
    # typing on with the provider down: the run stops and says so; the terms found stay stored
    with pytest.raises(LLMError):
        _extract(_settings(tmp_path), vault, chat)


@pytest.mark.neo4j
def test_a_terms_build_loads_typed_and_untyped_terms(clean_graph, neo4j_settings, tmp_path: Path) -> None:
    from graphrag_got.graph.stats import graph_stats
    from graphrag_got.pipeline.build import run_build

    vault = _vault(tmp_path / "vault")
    onto_file = tmp_path / "guilds.json"
    onto_file.write_text(json.dumps(ONTOLOGY), encoding="utf-8")
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", ontology_path=onto_file,
                                             extraction="terms", term_typing=True, embeddings=False)
    lines: list[str] = []
    result = run_build(settings, vault, chat=TypingChat(), say=lines.append, communities=False)
    assert lines[0].startswith("extraction strategy: terms (") and result.llm_calls["extract"] == 1
    records, _, _ = clean_graph.execute_query(
        "MATCH (e:Entity) RETURN e.name AS name, [l IN labels(e) WHERE l <> 'Entity'] AS labels")
    labels = {r["name"]: r["labels"] for r in records}
    assert labels["Orla Venn"] == ["Person"] and labels["Lantern Guild"] == [TERM_CLASS]
    co, _, _ = clean_graph.execute_query("MATCH (:Entity {name: 'Orla Venn'})-[r:CO_OCCURS]-(:Entity {name: "
                                         "'Lantern Guild'}) RETURN count(r) AS n")
    assert co[0]["n"] == 1
    stats = graph_stats(clean_graph, settings.neo4j, onto_file)
    assert not stats.get("entity_violations"), stats.get("entity_violations")
    assert stats["untyped_terms"] >= 1 and stats["documents_by_layer"] == {"typed entities": 2, "untyped terms": 3,
                                                                           "typed relations": 0}

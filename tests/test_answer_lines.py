"""The lean answer forms (lines, arrays): reading, the grammar and schema, the prompt, the audit of
what does not read, the run end to end through a replayed model, and stored answers of every form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from graphrag_got import prompts
from graphrag_got.config import Settings
from graphrag_got.extract.answer import RawAnswer
from graphrag_got.extract.forms import FORMS, answer_form, expand_answer
from graphrag_got.extract.forms.lines import LinesForm, read_lines
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.validate import Reason, Validator
from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parents[1]
GOT = ROOT / "ontology" / "got.json"


@pytest.fixture(scope="module")
def onto() -> Ontology:
    return Ontology.from_file(GOT)


def test_lines_read_into_the_full_form_with_classes_from_the_entity_lines() -> None:
    full = read_lines(["Personaje: Jon Snow", "- CasaNoble: Casa Stark | lema=Se acerca el invierno",
                       "Jon Snow -PERTENECE_A-> Casa Stark | momento=al principio",
                       "Jean-Luc Dupont -SE_ENCUENTRA_CON-> Jon Snow"])
    assert full["entities"] == [{"type": "Personaje", "name": "Jon Snow"},
                                {"type": "CasaNoble", "name": "Casa Stark", "lema": "Se acerca el invierno"}]
    assert full["relations"][0] == {"relation": "PERTENECE_A", "subject": "Jon Snow", "subject_type": "Personaje",
                                    "object": "Casa Stark", "object_type": "CasaNoble", "momento": "al principio"}
    # an end no entity line lists has no class here: the audited repairs and the validator decide it
    assert full["relations"][1]["subject"] == "Jean-Luc Dupont" and full["relations"][1]["subject_type"] is None
    assert full["unparsed"] == []


def test_a_line_that_does_not_read_is_refused_with_its_own_reason_and_kept_as_written(onto: Ontology) -> None:
    stored, _ = LinesForm().read("Personaje: Jon Snow\nPersonaje: Arya Stark\nJon Snow is brave\n"
                                 "Jon Snow -SE_ENCUENTRA_CON-> Arya Stark | junto al muro\n")
    assert stored == {"lines": ["Personaje: Jon Snow", "Personaje: Arya Stark", "Jon Snow is brave",
                                "Jon Snow -SE_ENCUENTRA_CON-> Arya Stark | junto al muro"]}
    answer = RawAnswer.read(stored)
    assert len(answer.entities) == 2 and len(answer.relations) == 1 and len(answer.unparsed) == 2
    out = Validator(onto).validate(stored, "c1", "d1")
    refused = [r for r in out.rejections if r.reason == Reason.UNPARSED]
    assert {r.item["line"] for r in refused} == {"Jon Snow is brave",
                                                 "Jon Snow -SE_ENCUENTRA_CON-> Arya Stark | junto al muro"}
    assert {r.kind for r in refused} == {"entity", "relation"}
    assert all("could not be read" in r.message for r in refused)
    # the fact itself was read; only its unreadable attribute part was refused
    assert [(r.subject, r.relation, r.object) for r in out.relations] == [("Jon Snow", "SE_ENCUENTRA_CON", "Arya Stark")]


def test_an_answer_with_no_readable_line_is_asked_again_and_an_empty_one_is_nothing_found() -> None:
    with pytest.raises(ValueError, match="no line of the answer"):
        LinesForm().read("I found these people in the text: Jon and Arya.")
    assert LinesForm().read("") == ({"lines": []}, False)
    # a model that wrote the full JSON form anyway is read as that
    full = {"entities": [{"type": "Personaje", "name": "Jon Snow"}], "relations": []}
    assert LinesForm().read(json.dumps(full)) == (full, False)


def test_every_form_writes_the_ontology_examples_so_they_read_back_to_the_same_facts(onto: Ontology) -> None:
    assert onto.examples
    for name, form in FORMS.items():
        for ex in onto.examples:
            text = form.example_answer(onto, ex)
            back = RawAnswer.read(form.read(text)[0])
            facts = {(r["subject"], r["relation"], r["object"]) for r in back.relations}
            assert facts == {(r.subject, r.relation, r.object) for r in ex.relations}, name
            assert {e["name"] for e in back.entities} == {e.name for e in ex.entities}, name
            assert not back.unparsed


def test_lean_forms_write_far_fewer_characters_than_the_full_form(onto: Ontology) -> None:
    sizes = {name: sum(len(f.example_answer(onto, ex)) for ex in onto.examples) for name, f in FORMS.items()}
    assert sizes["lines"] < 0.5 * sizes["full"] and sizes["arrays"] < 0.6 * sizes["full"]


def test_the_arrays_examples_fit_the_arrays_schema(onto: Ontology) -> None:
    schema = answer_form("arrays").constraint(onto, 25, 25).schema
    assert schema is not None
    for ex in onto.examples:
        jsonschema.validate(json.loads(FORMS["arrays"].example_answer(onto, ex)), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ents": [["Dragon", "Drogon"]], "facts": []}, schema)  # not a class of the ontology


def test_the_lines_grammar_enumerates_the_ontology_and_compiles_in_llama_cpp(onto: Ontology) -> None:
    grammar = LinesForm().grammar(onto, 25, 25)
    assert "root ::= fact{0,25} entity{0,25}" in grammar
    for rel in onto.relations:
        assert f"-{rel.name}-> " in grammar
    assert 'name " (" ("Personaje") ") -CASADO_CON-> " name " (" ("Personaje") ")"' in grammar  # domain and range
    assert '(" | genero=" prop-0-1)?' in grammar  # a property at most once
    assert '"masculino" | "femenino"' in grammar  # an enum property's values
    llama_cpp = pytest.importorskip("llama_cpp")
    assert llama_cpp.LlamaGrammar.from_string(grammar, verbose=False) is not None


def test_the_lines_prompt_asks_for_lines_and_the_full_prompt_is_unchanged(onto: Ontology) -> None:
    system = prompts.extraction_system_prompt(onto, "lines")
    assert "One line per fact" in system and '"confidence"' not in system
    assert FORMS["lines"].example_answer(onto, onto.examples[0]) in system
    user = prompts.extraction_user_prompt("Un texto.", form="lines")
    assert user.endswith("one per line.")
    assert prompts.extraction_user_prompt("Un texto.").endswith("of this text as JSON.")
    assert "Answer with a single JSON object" in prompts.extraction_system_prompt(onto)


def test_stored_answers_of_every_form_read_to_the_same_full_form() -> None:
    full = {"entities": [{"type": "Personaje", "name": "A"}, {"type": "Personaje", "name": "B"}],
            "relations": [{"relation": "CASADO_CON", "subject": "A", "subject_type": "Personaje", "object": "B",
                           "object_type": "Personaje"}]}
    compact = {"e": [{"t": "Personaje", "n": "A"}, {"t": "Personaje", "n": "B"}], "r": [{"r": "CASADO_CON", "s": 0, "o": 1}]}
    lines = {"lines": ["Personaje: A", "Personaje: B", "A -CASADO_CON-> B"]}
    arrays = {"ents": [["Personaje", "A"], ["Personaje", "B"]], "facts": [["A", "CASADO_CON", "B"]]}
    for stored in (full, compact, lines, arrays):
        read = RawAnswer.read(stored)
        assert [(r["subject"], r["subject_type"], r["relation"], r["object"], r["object_type"]) for r in read.relations] \
            == [("A", "Personaje", "CASADO_CON", "B", "Personaje")]
    assert expand_answer(full) is full


def test_an_arrays_item_of_the_wrong_shape_is_refused_as_unparsed(onto: Ontology) -> None:
    stored = {"ents": [["Personaje", "A"], ["Personaje"]], "facts": [["A", "CASADO_CON"], "B"]}
    out = Validator(onto).validate(stored, "c1", "d1")
    assert sum(r.reason == Reason.UNPARSED for r in out.rejections) == 3


PARAGRAPHS = [
    "Jon Snow se casa con Ygritte más allá del Muro, y Ygritte muere después en la batalla.",
    "Cersei Lannister contrata a la Compañía Dorada para defender Desembarco del Rey.",
]
LINES_ANSWERS = [
    ["Personaje: Jon Snow\nPersonaje: Ygritte\nJon Snow -CASADO_CON-> Ygritte\nYgritte died in battle\n"],
    ["lo siento", "Personaje: Cersei Lannister\nOrganizacion: Compañía Dorada | tipo=mercenaria\n"
                  "Cersei Lannister -CONTRATA-> Compañía Dorada\n"],
]


def _replay(tmp_path: Path, answers: list[list[str]]) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "mini.txt").write_text("\n\n".join(PARAGRAPHS) + "\n", encoding="utf-8")
    chunks = read_corpus(corpus, min_chars=10, max_chars=1500)[0].chunks
    responses = [{"chunk_id": ch.id, "chunk_hash": ch.hash, "responses": raws} for ch, raws in zip(chunks, answers)]
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"format": "graphrag_got.replay/1", "responses": responses}, ensure_ascii=False),
                      encoding="utf-8")
    return corpus, replay


def _settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10, relation_cues=False, **kw)


def test_a_lines_run_extracts_audits_caches_and_revalidates_without_calls(tmp_path: Path, onto: Ontology) -> None:
    corpus, replay = _replay(tmp_path, LINES_ANSWERS)
    settings = _settings(tmp_path, llm_provider="replay", replay_file=replay, answer_form="lines")
    s1 = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking,
                        llm=settings.llm)
    assert s1.chunks == 2 and s1.llm_calls == 3 and s1.failed_chunks == 0  # the second chunk was asked again
    data = json.loads(s1.out_path.read_text(encoding="utf-8"))
    rels = {(r["subject"], r["relation"], r["object"]) for r in data["relations"]}
    assert rels == {("Jon Snow", "CASADO_CON", "Ygritte"), ("Cersei Lannister", "CONTRATA", "Compañía Dorada")}
    unparsed = [r for r in data["rejections"] if r["reason"] == "unparsed"]
    assert [r["item"]["line"] for r in unparsed] == ["Ygritte died in battle"]
    assert s1.by_reason.get("unparsed") == 1
    again = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking,
                           llm=settings.llm)
    assert again.llm_calls == 0 and again.cache_hits == 2
    revalidated = run_extraction(settings.extract, onto, corpus, revalidate=True, files=settings.files,
                                 chunking=settings.chunking, llm=settings.llm)
    assert revalidated.llm_calls == 0 and revalidated.relations == s1.relations
    # the stored answers are kept apart from the full form's: switching forms asks again
    full = _settings(tmp_path, llm_provider="replay", replay_file=replay)
    other = run_extraction(full.extract, onto, corpus, revalidate=True, files=full.files, chunking=full.chunking,
                           llm=full.llm)
    assert other.missing_chunks == 2


def test_a_call_s_grammar_offers_only_the_names_its_text_writes(onto: Ontology) -> None:
    form = LinesForm()
    text = "Jon Snow se casa con Ygritte más allá del Muro."
    grammar = form.for_text(form.constraint(onto, 25, 12), text).grammar
    assert grammar is not None and '"Jon"' in grammar and '" Snow"' in grammar and '"Ygritte"' in grammar
    assert "[^\\n|:>( ]" not in grammar  # the free name rule is gone
    assert form.for_text(form.constraint(onto, 25, 12), "sin nombres aquí.").grammar == form.grammar(onto, 25, 12)


def test_a_streamed_answer_ends_at_its_first_repeated_line() -> None:
    from types import SimpleNamespace

    from graphrag_got.llm.providers.streaming import read_stream, repeated_line

    def piece(text: str) -> SimpleNamespace:
        return SimpleNamespace(model="m", usage=None, model_extra={},
                               choices=[SimpleNamespace(delta=SimpleNamespace(content=text), finish_reason=None)])

    pieces = ["X: A\n", "X: A\n", "A (X) -R-> B (Y)", "\n", "C (X) -R-> B (Y)\n", "A (X) -R-> B (Y)", "\n",
              "never read\n"]
    read: list[str] = []

    def chunks():  # noqa: ANN202
        for p in pieces:
            read.append(p)
            yield piece(p)

    answer = read_stream(chunks(), url="http://x", stall_s=5, until=lambda text: repeated_line(text, "->"))
    assert answer.text == "X: A\nX: A\nA (X) -R-> B (Y)\nC (X) -R-> B (Y)\n"  # only a fact line again ends it
    assert answer.finish_reason == "repeated_line" and answer.output_tokens == 7
    assert repeated_line("X: A\nX: A\n") == 5 and repeated_line("X: A\nX: A\n", "->") is None
    assert "never read\n" not in read  # the stream was left there: the server writes no more
    assert read_stream(iter([piece(p) for p in pieces]), url="http://x", stall_s=5).text == "".join(pieces)


def test_a_recall_pass_adds_what_the_first_answer_missed_in_the_same_conversation(tmp_path: Path,
                                                                                  onto: Ontology) -> None:
    answers = [["Personaje: Jon Snow\nPersonaje: Ygritte\nJon Snow (Personaje) -CASADO_CON-> Ygritte (Personaje)\n",
                "Personaje: Ygritte | estado=muerto\nJon Snow (Personaje) -CASADO_CON-> Ygritte (Personaje)\n"],
               ["Personaje: Cersei Lannister\nOrganizacion: Compañía Dorada\n"
                "Cersei Lannister (Personaje) -CONTRATA-> Compañía Dorada (Organizacion)\n", ""]]
    corpus, replay = _replay(tmp_path, answers)
    seen: list[list[Any]] = []
    from graphrag_got.llm.replay import ReplayChatModel

    original = ReplayChatModel._generate

    def spy(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001, ANN202
        seen.append([(m.type, str(m.content)) for m in messages])
        return original(self, messages, stop, run_manager, **kwargs)

    settings = _settings(tmp_path, llm_provider="replay", replay_file=replay, answer_form="lines", gleanings=1)
    ReplayChatModel._generate = spy  # type: ignore[method-assign]
    try:
        s1 = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking,
                            llm=settings.llm)
    finally:
        ReplayChatModel._generate = original  # type: ignore[method-assign]
    assert s1.llm_calls == 4  # one answer and one recall pass a chunk
    passes = [m for m in seen if len(m) == 4]
    assert len(passes) == 2 and all(m[2][0] == "ai" and "missing" in m[3][1] for m in passes)
    data = json.loads(s1.out_path.read_text(encoding="utf-8"))
    ygritte = next(e for e in data["entities"] if e["name"] == "Ygritte")
    assert ygritte["properties"].get("estado") == "muerto"  # the recall pass's line, merged
    assert len(data["relations"]) == 2  # the repeated fact counted once
    again = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking,
                           llm=settings.llm)
    assert again.llm_calls == 0

"""Verification: a yes/no question per triple against its evidence, cached, replayable, audited."""

from __future__ import annotations

import json
from pathlib import Path

from graphrag_got.config import Settings
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.extraction import Extraction, Reason
from graphrag_got.llm.replay import ReplayChatModel
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import verification_question

GOT = Path(__file__).resolve().parents[1] / "ontology" / "got.json"


def _onto() -> Ontology:
    return Ontology.from_file(GOT)


def _setup(tmp_path: Path) -> tuple[Settings, Path, dict, dict]:
    onto = _onto()
    rel = onto.relations[0]
    s_cls, o_cls = rel.domain[0], rel.range[0]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    text_a = "Alfa Uno y Beta Dos aparecen juntos en esta frase."
    text_b = "Gamma Tres y Delta Cuatro aparecen juntos en otra frase."
    (corpus / "doc.txt").write_text(f"{text_a}\n\n{text_b}\n", encoding="utf-8")
    answer_a = {"entities": [{"type": s_cls, "name": "Alfa Uno"}, {"type": o_cls, "name": "Beta Dos"}],
                "relations": [{"relation": rel.name, "subject": "Alfa Uno", "subject_type": s_cls,
                               "object": "Beta Dos", "object_type": o_cls}]}
    answer_b = {"entities": [{"type": s_cls, "name": "Gamma Tres"}, {"type": o_cls, "name": "Delta Cuatro"}],
                "relations": [{"relation": rel.name, "subject": "Gamma Tres", "subject_type": s_cls,
                               "object": "Delta Cuatro", "object_type": o_cls}]}
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", corpus_path=corpus, ontology_path=GOT,
                        llm_provider="replay", chunk_min_chars=10, verify=True, resolution=False,
                        relation_cues=False)  # the texts state no relation on purpose: the verdicts decide
    return settings, corpus, answer_a, answer_b


class _Chat(ReplayChatModel):
    """Extraction answers by chunk; verdicts by question: "yes" when the passage names Alfa Uno."""

    answers: list[str] = []
    asked: list[str] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        user = str(messages[-1].content)
        if user.startswith("PASSAGE:"):
            self.asked.append(user)
            text = json.dumps({"answer": "yes" if "Alfa Uno" in user.split("STATEMENT:")[0] else "no"})
        else:
            text = self.answers.pop(0)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def test_unconfirmed_triples_are_refused_with_the_question_and_verdicts_are_cached(tmp_path: Path) -> None:
    settings, corpus, a, b = _setup(tmp_path)
    onto = _onto()
    chat = _Chat(answers=[json.dumps(a), json.dumps(b)], asked=[])
    summary = run_extraction(settings.extract, onto, corpus, chat=chat, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    ext = Extraction.read(summary.out_path)
    assert [(r.subject, r.object) for r in ext.relations] == [("Alfa Uno", "Beta Dos")]
    refused = [r for r in ext.rejections if r.reason == Reason.NOT_CONFIRMED]
    assert len(refused) == 1 and refused[0].subject == "Gamma Tres" and refused[0].object == "Delta Cuatro"
    assert "PASSAGE:" in refused[0].message and "Does the passage state this?" in refused[0].message
    assert summary.llm_calls == 4  # two chunks, two verdicts
    assert "2 triples asked, 1 confirmed, 1 refused" in (summary.verification or "")
    assert len(chat.asked) == 2

    # a rerun pays nothing: chunk answers and verdicts come from the caches
    again = _Chat(answers=[], asked=[])
    summary2 = run_extraction(settings.extract, onto, corpus, chat=again, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert summary2.llm_calls == 0 and again.asked == []
    assert [(r.subject, r.object) for r in Extraction.read(summary2.out_path).relations] == [("Alfa Uno", "Beta Dos")]


def test_revalidation_never_calls_the_model_and_keeps_unverified_triples(tmp_path: Path) -> None:
    settings, corpus, a, b = _setup(tmp_path)
    onto = _onto()
    cfg = settings.with_overrides(verify=False)
    run_extraction(cfg.extract, onto, corpus, chat=_Chat(answers=[json.dumps(a), json.dumps(b)],
                                                                                    asked=[]), files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    idle = _Chat(answers=[], asked=[])
    summary = run_extraction(settings.extract, onto, corpus, chat=idle, revalidate=True, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert summary.llm_calls == 0 and idle.asked == []  # revalidation never asks
    assert "2 unverified" in (summary.verification or "")
    assert len(Extraction.read(summary.out_path).relations) == 2


def test_exported_replay_carries_the_verdicts(tmp_path: Path) -> None:
    settings, corpus, a, b = _setup(tmp_path)
    onto = _onto()
    replay = tmp_path / "replay.json"
    run_extraction(settings.extract, onto, corpus, chat=_Chat(answers=[json.dumps(a), json.dumps(b)], asked=[]),
                   export_replay=replay, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    fresh = settings.with_overrides(home=tmp_path / "home2", out_dir=tmp_path / "out2", replay_file=replay)
    summary = run_extraction(fresh.extract, onto, corpus, files=fresh.files, chunking=fresh.chunking, llm=fresh.llm)  # the replay provider answers every call
    ext = Extraction.read(summary.out_path)
    assert [(r.subject, r.object) for r in ext.relations] == [("Alfa Uno", "Beta Dos")]
    assert [r.subject for r in ext.rejections if r.reason == Reason.NOT_CONFIRMED] == ["Gamma Tres"]


def test_the_question_shows_the_relation_meaning_and_attributes() -> None:
    q = verification_question("A", "X", "REL", "A does something to B.", "B", "Y", {"when": "later", "none": ""},
                              "A did it to B.")
    assert q.startswith("PASSAGE:\nA did it to B.\n\nSTATEMENT: A (X) REL (A does something to B) B (Y); when: later")
    assert "none" not in q

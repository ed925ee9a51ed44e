"""Regression tests: inputs a hostile user (or a looping small model) sent that used to crash a run.

One test per failure found; each name says what used to go wrong.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graphrag_got.ingest.chunking import chunk_text, read_corpus
from graphrag_got.config import Settings
from graphrag_got.errors import CorpusError, ExtractionError, GraphragGotError, LLMError
from graphrag_got.extract.run import run_extraction
from graphrag_got.llm.calls import LLMContextError, LLMOutputError, complete_text
from graphrag_got.llm.json_answers import complete_json, parse_json_text
from graphrag_got.llm.replay import ReplayChatModel
from graphrag_got.common.normalize import entity_uid, is_empty_key, normalize_name
from graphrag_got.ontology.model import Ontology
from graphrag_got.common.sanitize import clean_json, clean_text, replace_surrogates

ROOT = Path(__file__).resolve().parents[1]
ONTOLOGY = ROOT / "ontology" / "got.json"
EMPTY_ANSWER = '{"entities": [], "relations": []}'


def _offsets_exact(text: str, chunks: list) -> None:  # type: ignore[type-arg]
    for c in chunks:
        assert text[c.start:c.end] == c.text


# --- 1. chunking enforces max_chars on any text ------------------------------------------------


def test_5mb_paragraph_without_punctuation_is_cut_to_max_chars(tmp_path: Path) -> None:
    text = "palabra " * 625_000  # 5,000,000 characters, no sentence end, no clause mark
    (tmp_path / "big.txt").write_text(text, encoding="utf-8")
    [doc] = read_corpus(tmp_path / "big.txt", min_chars=40, max_chars=1500)
    assert len(doc.chunks) >= len(text) // 1500
    assert max(len(c.text) for c in doc.chunks) <= 1500
    assert all(c.text.startswith("palabra") and c.text.endswith("palabra") for c in doc.chunks)  # whole words
    _offsets_exact(text, doc.chunks)
    assert " ".join(c.text for c in doc.chunks) == text.strip()  # nothing lost


def test_long_sentence_is_cut_at_clauses_before_words() -> None:
    clauses = [f"cláusula número {i} con varias palabras" for i in range(12)]
    text = ", ".join(clauses) + "."
    result = chunk_text("d.txt", text, min_chars=0, max_chars=120)
    assert len(result.chunks) > 1 and all(len(c.text) <= 120 for c in result.chunks)
    assert all(c.text.endswith((",", ".")) for c in result.chunks)  # every cut right after a clause mark
    _offsets_exact(text, result.chunks)


def test_text_without_any_boundary_is_hard_split_keeping_accents_on_their_letter() -> None:
    text = "e\u0301" * 500  # 1,000 code points, no white space: é written as e + combining acute
    result = chunk_text("d.txt", text, min_chars=0, max_chars=99)
    assert all(len(c.text) <= 99 for c in result.chunks)
    assert "".join(c.text for c in result.chunks) == text
    assert not any(unicodedata.combining(c.text[0]) for c in result.chunks)  # no chunk starts with a bare accent
    _offsets_exact(text, result.chunks)


def test_huge_code_fence_and_heading_are_cut_too() -> None:
    fence = "```\n" + "\n".join(f"x_{i} = {i}" for i in range(2000)) + "\n```"
    heading = "# " + "titulo" * 400
    text = f"{heading}\n\n{fence}\n"
    result = chunk_text("d.md", text, kind="markdown", min_chars=0, max_chars=500)
    assert all(len(c.text) <= 500 for c in result.chunks)
    _offsets_exact(text, result.chunks)


def test_ids_of_paragraphs_that_fit_do_not_change_when_a_huge_one_is_added() -> None:
    small = ["Primer párrafo corto del documento.", "Segundo párrafo corto, con una coma."]
    before = chunk_text("d.txt", "\n\n".join(small), min_chars=0, max_chars=200)
    after = chunk_text("d.txt", "\n\n".join([small[0], "x" * 5000, small[1]]), min_chars=0, max_chars=200)
    ids_after = [c.id for c in after.chunks]
    assert ids_after[0] == before.chunks[0].id and ids_after[-1] == before.chunks[1].id
    assert len(after.chunks) == 2 + 25


# --- 2. a prompt longer than the context window skips that chunk, it does not stop the run ---


class _SmallContextModel(BaseChatModel):
    """Behaves like llama-cpp-python with a small n_ctx: when the non-system messages are longer
    than ``limit`` characters it raises the ValueError llama.cpp raises; otherwise it answers
    ``answer``."""

    limit: int = 200
    answer: str = EMPTY_ANSWER
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "small-context"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        size = sum(len(str(m.content)) for m in messages if not isinstance(m, SystemMessage))
        if size > self.limit:
            raise ValueError(f"Requested tokens ({size}) exceed context window of {self.limit}")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.answer))])


class _Unreachable(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "unreachable"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        raise ConnectionRefusedError(111, "Connection refused")


def test_context_window_overflow_is_an_output_error_with_no_raw_responses() -> None:
    with pytest.raises(LLMContextError) as info:
        complete_json(_SmallContextModel(limit=10), "system prompt", "a user prompt longer than ten")
    assert isinstance(info.value, LLMOutputError)
    assert info.value.raw_responses == []
    message = str(info.value)
    assert "context window" in message and "GRAPHRAG_CHUNK_MAX_CHARS" in message


def test_context_overflow_on_the_retry_keeps_the_first_answer() -> None:
    # the first answer is unusable; the retry prompt (which includes it) no longer fits
    chat = _SmallContextModel(limit=40, answer="not json " * 10)
    with pytest.raises(LLMContextError) as info:
        complete_json(chat, "s", "u")
    assert info.value.raw_responses == ["not json " * 10]
    assert chat.calls == 2


def test_unreachable_provider_is_still_an_error_that_stops() -> None:
    with pytest.raises(LLMError) as info:
        complete_json(_Unreachable(), "s", "u")
    assert not isinstance(info.value, LLMOutputError)


def _settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10)


def test_run_records_a_chunk_too_long_for_the_context_and_goes_on(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    short, long_ = "Un párrafo corto que cabe.", "Un párrafo largo que no cabe en el contexto. " * 20
    (corpus / "doc.txt").write_text(f"{short}\n\n{long_}\n", encoding="utf-8")
    [doc] = read_corpus(corpus, min_chars=10, max_chars=1500)
    chat = _SmallContextModel(limit=500)  # the short chunk's prompt fits, the long one's does not
    cfg = _settings(tmp_path)
    summary = run_extraction(cfg.extract, Ontology.from_file(ONTOLOGY), corpus, chat=chat, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert summary.failed_chunks == 1 and summary.chunks == 2
    data = json.loads(summary.out_path.read_text(encoding="utf-8"))
    [failed] = data["failed_chunks"]
    assert "context window" in failed["error"]
    assert failed["chunk_id"] == doc.chunks[1].id


def test_run_still_stops_when_the_provider_cannot_answer(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("Un párrafo corto que cabe.\n", encoding="utf-8")
    with pytest.raises(ExtractionError, match="Connection refused"):
        cfg = _settings(tmp_path)
        run_extraction(cfg.extract, Ontology.from_file(ONTOLOGY), corpus, chat=_Unreachable(), files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)


# --- 3. answers that crashed the parser or a later consumer ---------------------------------


@pytest.mark.parametrize("answer", ["[" * 1000, "{" * 1000, '{"a": ' * 1000, "```json\n" + "[" * 5000 + "\n```"],
                         ids=["1000-brackets", "1000-braces", "1000-keys", "fenced-5000"])
def test_bracket_loop_answer_is_an_output_error_not_a_recursion_error(answer: str) -> None:
    with pytest.raises(ValueError, match="levels deep"):
        parse_json_text(answer)
    with pytest.raises(LLMOutputError, match="levels deep") as info:
        complete_json(ReplayChatModel(fallback=[answer, answer]), "s", "u")
    assert info.value.raw_responses == [answer, answer]


def test_800_deep_balanced_nesting_is_refused_before_any_consumer_sees_it() -> None:
    answer = '{"entities": ' + "[" * 800 + "]" * 800 + "}"
    json.loads(answer)  # valid JSON: Python parses it, but no consumer should have to recurse that deep
    with pytest.raises(LLMOutputError, match="32 levels"):
        complete_json(ReplayChatModel(fallback=[answer, answer]), "s", "u")
    ok = '{"a": ' + "[" * 30 + "1" + "]" * 30 + "}"  # 31 levels: accepted
    value, _ = complete_json(ReplayChatModel(fallback=[ok]), "s", "u")
    assert value == json.loads(ok)


def test_lone_surrogate_answer_can_be_cached(tmp_path: Path) -> None:
    name = "Arya\ud83d"  # what a JSON "\ud83d" escape decodes to: not encodable as UTF-8
    answer = json.dumps({"entities": [{"type": "Personaje", "name": name}], "relations": []})
    assert "\\ud83d" in answer
    raw_surrogate = '{"entities": [], "relations": [], "note": "' + name + '"}'  # a raw lone surrogate too
    for text in (answer, raw_surrogate):
        value, attempt = complete_json(ReplayChatModel(fallback=[text]), "s", "u")
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        for raw in attempt.raw_responses:
            raw.encode("utf-8")
    value, _ = complete_json(ReplayChatModel(fallback=[answer]), "s", "u")
    assert value["entities"][0]["name"] == "Arya\ufffd"

    # and end to end: the extraction run writes its cache and extraction.json as UTF-8
    corpus = tmp_path / "c.txt"
    corpus.write_text("Arya aparece en un párrafo corto.\n", encoding="utf-8")
    cfg = _settings(tmp_path)
    summary = run_extraction(cfg.extract, Ontology.from_file(ONTOLOGY), corpus,
                             chat=_SmallContextModel(limit=10**6, answer=raw_surrogate), files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert summary.failed_chunks == 0
    summary.out_path.read_text(encoding="utf-8")


def test_oversized_answer_is_refused_with_its_size() -> None:
    answer = '{"a": "' + "x" * 1_000_001 + '"}'
    with pytest.raises(LLMOutputError, match="characters long"):
        complete_json(ReplayChatModel(fallback=[answer, answer]), "s", "u")


@pytest.mark.parametrize("answer", ['{"a": NaN, "b": Infinity}', '{"a": 1e999}'])
def test_non_finite_numbers_do_not_leak_into_json_files(answer: str) -> None:
    value, _ = complete_json(ReplayChatModel(fallback=[answer]), "s", "u")
    json.dumps(value, allow_nan=False)


# --- 4. every string from a model answer is cleaned once, at the boundary -------------------


def test_clean_text_removes_invisible_and_control_characters() -> None:
    dirty = "Ar\u200bya\u202e \x00St\u00e4rk\ufeff\r\n\tfin\x85\x7f\u2066x\u2069 e\u0301"
    assert clean_text(dirty) == "Arya Stärk\n\tfinx é"
    assert clean_text("\ud83d") == "\ufffd"
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a surrogate pair split in two code points is joined
    assert unicodedata.is_normalized("NFC", clean_text("e\u0301"))


JOINED = [
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian "mi-khaham": ZWNJ keeps the prefix apart
    "\u0915\u094d\u200d\u0937",  # Devanagari ka + virama + ZWJ + ssa: the half form of ka
    "\u0d28\u0d4d\u200d",  # Malayalam chillu written with ZWJ at the end of a word
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # family: man ZWJ woman ZWJ girl
    "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag: white flag, VS16, ZWJ, rainbow
]


@pytest.mark.parametrize("word", JOINED)
def test_joiners_inside_words_are_kept(word: str) -> None:
    """ZWNJ/ZWJ between two characters are part of the spelling (Persian, Indic scripts, emoji
    sequences): a name keeps them, in a sentence too; only the merge key ignores them."""
    assert clean_text(word) == word
    assert clean_text(f"Ver {word}, otra vez.") == f"Ver {word}, otra vez."
    value, _ = complete_json(ReplayChatModel(fallback=[json.dumps({"name": word})]), "s", "u")
    assert value == {"name": word}
    assert normalize_name(word) == normalize_name(word.replace("\u200c", "").replace("\u200d", ""))


def test_joiners_that_join_nothing_are_padding_and_removed() -> None:
    assert clean_text("\u200dJon Snow\u200c") == "Jon Snow"
    assert clean_text("Jon\u200d Snow") == clean_text("Jon \u200cSnow") == "Jon Snow"
    assert clean_text("\u200c\u200d") == clean_text("\u200d \u200c").strip() == ""
    assert clean_text("a\u200b\u200cb") == "a\u200cb"  # a zero-width space is still removed


def test_clean_json_cleans_keys_and_values_and_bounds_depth() -> None:
    value = {"na\u200bme": ["Jon\x00", {"k\ud800": "v\u202e"}], "n": 1, "f": float("nan"), "t": True}
    assert clean_json(value) == {"name": ["Jon", {"k\ufffd": "v"}], "n": 1, "f": None, "t": True}
    deep: Any = "x"
    for _ in range(40):
        deep = [deep]
    with pytest.raises(ValueError, match="nested more than 32"):
        clean_json(deep)
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError):
        clean_json(cyclic)


def test_complete_json_returns_cleaned_values_and_keeps_raw_text() -> None:
    answer = '{"entities": [{"name": "Sansa\u200b Stark\\u0000", "type\u200d": "Personaje"}]}'
    value, attempt = complete_json(ReplayChatModel(fallback=[answer]), "s", "u")
    assert value == {"entities": [{"name": "Sansa Stark", "type": "Personaje"}]}
    assert attempt.raw_responses == [answer]  # the audit keeps what the model said
    assert replace_surrogates(answer) == answer


def test_text_answers_are_cleaned_too() -> None:
    answer = complete_text(FakeListChatModel(responses=["Una respuesta\u200b con\x00 basura\ud83d."]), "s", "u")
    assert answer == "Una respuesta con basura\ufffd."
    answer.encode("utf-8")


# --- 5. the merge key ignores invisible characters -------------------------------------------


def test_invisible_characters_do_not_make_a_different_entity() -> None:
    assert normalize_name("Arya\u200bStark") == normalize_name("AryaStark") == "aryastark"
    assert normalize_name("Arya \u200bStark") == normalize_name("Arya Stark") == "arya stark"
    assert normalize_name("\u202eArya Stark\u202c\ufeff") == "arya stark"
    assert normalize_name("Ar\u00adya") == "arya"  # soft hyphen
    assert entity_uid("Personaje", "Jon\u200d Snow") == "Personaje|jon snow"
    assert normalize_name("  Daenerys   Targaryen ") == normalize_name("daenérys targaryen") == "daenerys targaryen"


@pytest.mark.parametrize("name", ["", "   ", "\u0301\u0308", "\u200b\u200d\ufeff", "\u202e\u2066", "\x00\x07",
                                  "\u200b \u0301\t"])
def test_name_with_no_visible_character_has_an_empty_key(name: str) -> None:
    assert normalize_name(name) == ""
    assert is_empty_key(name)


def test_ordinary_names_are_not_empty_keys() -> None:
    assert not any(is_empty_key(n) for n in ["Jon", "Ñ", "北京", "x\u200b", "Ελλάδα"])


# --- 6. front matter that is not plain data ---------------------------------------------------


def test_front_matter_with_unsafe_tags_is_cleaned_not_a_crash(caplog: pytest.LogCaptureFixture) -> None:
    text = ("---\n"
            "title: ok\n"
            "tags: !!set {b: null, a: null}\n"
            "blob: !!binary aGVsbG8=\n"
            "obj: !!python/object:os.system {}\n"
            "name: !!python/name:os.system\n"
            "local: !mytag value\n"
            "when: 2024-05-01 10:30:00\n"
            "nan: .nan\n"
            "nested: {inner: !!set {x: null}, 3: three}\n"
            "---\n"
            "# H\n\nTexto del documento.\n")
    with caplog.at_level(logging.WARNING, logger="graphrag_got.ingest.chunking"):
        result = chunk_text("fm.md", text, kind="markdown", min_chars=0, max_chars=500)
    meta = result.document.metadata
    assert meta == {"title": "ok", "tags": ["a", "b"], "when": "2024-05-01T10:30:00",
                    "nested": {"inner": ["x"], "3": "three"}}
    json.dumps(meta, ensure_ascii=False, allow_nan=False).encode("utf-8")
    warned = " ".join(r.getMessage() for r in caplog.records)
    for key in ("blob", "obj", "name", "local", "nan"):
        assert f"fm.md: front matter {key}" in warned


def test_front_matter_alias_bomb_and_recursion_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, (prev, name) in enumerate(zip("abcdefgh", "bcdefghi")):
        bomb.append(f"{name}: &{name} [{', '.join(['*' + prev] * 10)}]")
    text = "---\n" + "\n".join(bomb) + "\n---\nTexto.\n"
    with caplog.at_level(logging.WARNING, logger="graphrag_got.ingest.chunking"):
        result = chunk_text("bomb.md", text, kind="markdown", min_chars=0, max_chars=100)
    assert result.document.metadata == {}
    assert "bomb.md" in caplog.text
    cyclic = "---\nself: &s [1, *s]\ntitle: t\n---\nTexto.\n"
    meta = chunk_text("cyc.md", cyclic, kind="markdown", min_chars=0, max_chars=100).document.metadata
    assert meta["title"] == "t"
    json.dumps(meta)


def test_front_matter_surrogate_escape_becomes_replacement_character() -> None:
    text = '---\ntitle: "Casa \\ud83d"\n---\nTexto.\n'
    meta = chunk_text("s.md", text, kind="markdown", min_chars=0, max_chars=100).document.metadata
    assert meta == {"title": "Casa \ufffd"}


def test_front_matter_that_is_not_a_mapping_is_a_clear_error_before_any_model_call() -> None:
    for body, what in (("- a\n- b", "list"), ("just text", "str"), ("!!python/object:x {}", "python/object")):
        with pytest.raises(CorpusError, match=rf"nm\.md, line 2: .*mapping.*{what}"):
            chunk_text("nm.md", f"---\n{body}\n---\nTexto.\n", kind="markdown", min_chars=0, max_chars=100)


# --- 7. corpus files that are not UTF-8 text ------------------------------------------------


def test_binary_file_is_a_corpus_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "image.txt").write_bytes(b"GIF89a\x01\x00\x01\x00\x00\xff\x00,")
    with pytest.raises(CorpusError, match=r"image\.txt, line 1: a NUL byte at offset 7.*binary"):
        read_corpus(tmp_path, min_chars=0, max_chars=500, strict=True)


def test_utf16_file_is_a_corpus_error_that_says_so(tmp_path: Path) -> None:
    (tmp_path / "u16.txt").write_bytes("Texto en UTF-16.".encode("utf-16"))
    with pytest.raises(CorpusError, match=r"u16\.txt: .*UTF-16.*re-save it as UTF-8"):
        read_corpus(tmp_path, min_chars=0, max_chars=500, strict=True)


def test_invalid_utf8_names_file_line_and_byte(tmp_path: Path) -> None:
    (tmp_path / "l1.md").write_bytes(b"# T\n\nbien\nSe\xf1or\n")
    with pytest.raises(CorpusError, match=r"l1\.md, line 4: not valid UTF-8 \(byte 0xf1 at offset 12\)") as info:
        read_corpus(tmp_path, min_chars=0, max_chars=500, strict=True)
    assert isinstance(info.value, GraphragGotError)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "bom.md").write_bytes(b"\xef\xbb\xbf---\ntitle: t\n---\n# T\n\nTexto con BOM.\n")
    [doc] = read_corpus(tmp_path, min_chars=0, max_chars=500)
    assert doc.document.metadata == {"title": "t"}
    assert not doc.chunks[0].text.startswith("\ufeff")



def test_regression_bare_numbers_are_not_entity_names() -> None:
    """A number where a name belongs (``{"name": 42}``, NaN, true) is refused as malformed, audited."""
    from graphrag_got.ontology.model import Ontology
    from graphrag_got.extract.validate import Validator

    onto = Ontology.from_dict({"clases": {"A": {}}, "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A"}]})
    out = Validator(onto).validate({"entities": [{"type": "A", "name": 42}, {"type": "A", "name": True},
                                                 {"type": "A", "name": "x"}],
                                    "relations": [{"relation": "R", "subject": "x", "subject_type": "A",
                                                   "object": 7, "object_type": "A"}]})
    assert [e.name for e in out.entities] == ["x"] and not out.relations
    assert [r.reason.value for r in out.rejections] == ["malformed", "malformed", "malformed"]


@pytest.mark.parametrize("kind", ["folder", "latin1", "deep"])
def test_regression_unreadable_replay_file_is_one_clear_error(tmp_path, kind) -> None:
    from graphrag_got.errors import LLMError
    from graphrag_got.llm.replay import ReplayChatModel

    path = tmp_path / "replay.json"
    if kind == "folder":
        path.mkdir()
    elif kind == "latin1":
        path.write_bytes('{"responses": ["caf\xe9"]}'.encode("latin-1"))
    else:
        path.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(LLMError) as info:
        ReplayChatModel.from_file(path)
    assert str(path) in str(info.value)

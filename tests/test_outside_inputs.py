"""Issue 28: inputs from the real world. Nothing outside the folder given is read, and no input
stalls a run: links leaving a vault or a code tree are refused and listed, call chains parse in
linear time, code files have a size and time budget, failed chunks say why (and are retried when
the cause may be gone), unreadable notes are skipped and listed (``--strict`` stops instead),
error messages cap what they echo, and enum values that collide once normalized are refused.
"""

from __future__ import annotations

import json
import os
import string
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graphrag_got.cli import main
from graphrag_got.code.extractor import parse_tree, python_files, run_code_extraction
from graphrag_got.code.parse import MAX_CHAIN_PARTS, chain_of, parse_file, parser
from graphrag_got.common.sanitize import cap_text
from graphrag_got.common.walk import OUTSIDE_ROOT, walk_files
from graphrag_got.config import Settings
from graphrag_got.errors import CorpusError, OntologyError
from graphrag_got.extract.cache import CacheRecord
from graphrag_got.extract.extraction import Extraction, FailureReason
from graphrag_got.extract.run import run_extraction, should_retry
from graphrag_got.ingest.chunking import corpus_files, read_corpus
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parents[1]
GOT = ROOT / "ontology" / "got.json"
CODE = ROOT / "ontology" / "code.json"
NOTES = ROOT / "ontology" / "notes.json"
EMPTY_ANSWER = '{"entities": [], "relations": []}'
SECRET = "TOP-SECRET-PASSPHRASE correct horse battery staple, never to be read."
FAST = hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# --------------------------------------------------------------------------- 1. links outside
def _outside_and_vault(tmp_path: Path) -> tuple[Path, Path]:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    (secret / "more").mkdir()
    (secret / "more" / "deep.md").write_text(f"# Deep\n\n{SECRET}\n", encoding="utf-8")
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "ok.md").write_text("# Ok\n\nA note that lives inside the vault and may be read.\n",
                                           encoding="utf-8")
    (vault / "notes" / "x.md").symlink_to("../../secret/secret.md")  # relative, leaves the vault
    (vault / "passwd.md").symlink_to(secret / "secret.md")  # absolute
    (vault / "linked").symlink_to(secret / "more", target_is_directory=True)  # a folder outside
    (vault / "alias.md").symlink_to("notes/ok.md")  # stays inside: read
    (vault / "broken.md").symlink_to("nowhere.md")
    return secret, vault


def test_corpus_walk_refuses_links_leaving_the_folder_with_a_record(tmp_path: Path, caplog) -> None:
    _, vault = _outside_and_vault(tmp_path)
    skipped: list = []
    ids = [doc_id for doc_id, _ in corpus_files(vault, skipped=skipped)]
    assert ids == ["alias.md", "notes/ok.md"]
    reasons = {s.path: s.reason for s in skipped}
    assert reasons == {"notes/x.md": OUTSIDE_ROOT, "passwd.md": OUTSIDE_ROOT, "linked": OUTSIDE_ROOT,
                       "broken.md": "broken_link"}
    assert "GRAPHRAG_FOLLOW_OUTSIDE_LINKS" in skipped[0].message or "GRAPHRAG_FOLLOW_OUTSIDE_LINKS" in skipped[1].message
    assert sum("outside the folder" in r.getMessage() for r in caplog.records) == 3  # a warning line each


def test_following_outside_links_is_a_setting(tmp_path: Path) -> None:
    _, vault = _outside_and_vault(tmp_path)
    ids = [doc_id for doc_id, _ in corpus_files(vault, follow_outside_links=True)]
    assert ids == ["alias.md", "linked/deep.md", "notes/ok.md", "notes/x.md", "passwd.md"]
    assert Settings(follow_outside_links=True).chunking.follow_outside_links is True
    assert Settings().chunking.follow_outside_links is False


def test_link_cycles_and_pipes_do_not_stall_the_walk(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / "a").mkdir(parents=True)
    (vault / "a" / "n.md").write_text("# N\n\nSome note text that is long enough.\n", encoding="utf-8")
    (vault / "a" / "loop").symlink_to("..", target_is_directory=True)  # a cycle
    os.mkfifo(vault / "fifo.md")  # reading it would block forever
    skipped: list = []
    ids = [doc_id for doc_id, _ in corpus_files(vault, skipped=skipped, follow_outside_links=True)]
    assert ids == ["a/n.md"]
    assert {s.path: s.reason for s in skipped} == {"a/loop": "linked_folder_seen", "fifo.md": "not_a_regular_file"}


def test_code_walk_refuses_links_leaving_the_tree(tmp_path: Path) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text(f"PASSWORD = {SECRET!r}\n", encoding="utf-8")
    repo = tmp_path / "repo" / "pkg"
    repo.mkdir(parents=True)
    (repo / "mod.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    (repo / "passwd.py").symlink_to(secret)
    skipped: list = []
    assert [p.name for p in python_files(repo.parent, skipped=skipped)] == ["mod.py"]
    assert [(s.path, s.reason) for s in skipped] == [("pkg/passwd.py", OUTSIDE_ROOT)]
    out = tmp_path / "out.json"
    summary = run_code_extraction(Ontology.from_file(CODE), repo.parent, out)
    text = out.read_text(encoding="utf-8")
    assert SECRET not in text and "PASSWORD" not in text
    assert Extraction.read(out).skipped_files[0].reason == OUTSIDE_ROOT
    assert any("files skipped" in line and "pkg/passwd.py" in line for line in summary.lines())


_NAMES = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=4)


@FAST
@given(plan=st.lists(st.tuples(_NAMES, st.sampled_from(["file", "inside_link", "outside_link", "outside_dir",
                                                         "dir"])), min_size=1, max_size=12, unique_by=lambda t: t[0]))
def test_property_nothing_returned_is_outside_and_every_outside_link_is_recorded(tmp_path_factory, plan) -> None:
    base = tmp_path_factory.mktemp("walk")
    outside = base / "outside"
    outside.mkdir()
    (outside / "o.md").write_text("outside", encoding="utf-8")
    root = base / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "real.md").write_text("inside", encoding="utf-8")
    outside_links = set()
    for name, kind in plan:
        p = root / "sub" / f"{name}.md" if kind != "dir" and kind != "outside_dir" else root / name
        if kind == "file":
            p.write_text("x", encoding="utf-8")
        elif kind == "inside_link":
            p.symlink_to(root / "sub" / "real.md")
        elif kind == "outside_link":
            p.symlink_to(outside / "o.md")
            outside_links.add(p.relative_to(root).as_posix())
        elif kind == "outside_dir":
            p.symlink_to(outside, target_is_directory=True)
            outside_links.add(p.relative_to(root).as_posix())
        else:
            p.mkdir(exist_ok=True)
            (p / "n.md").write_text("y", encoding="utf-8")
    skipped: list = []
    found = walk_files(root, wanted=lambda n: n.endswith(".md"), prune=lambda n: n.startswith("."), skipped=skipped)
    real_root = root.resolve()
    assert all(path.resolve().is_relative_to(real_root) for _, path in found)
    assert {s.path for s in skipped if s.reason == OUTSIDE_ROOT} == outside_links
    assert "sub/real.md" in {doc_id for doc_id, _ in found}


# --------------------------------------------------------------------------- 2. code parser budget
def _chain_file(n: int, in_function: bool = False) -> tuple[bytes, str]:
    text = ("def f():\n    " if in_function else "") + "b = a" + ".m()" * n + "\n"
    return text.encode(), text


def _parse_seconds(n: int, in_function: bool = False) -> float:
    source, text = _chain_file(n, in_function)
    t0 = time.process_time()
    parse_file("gen.py", "gen", source, text, is_package=False)
    return time.process_time() - t0


def test_long_call_chains_parse_in_linear_time() -> None:
    # before: 1,000 / 2,000 / 4,000 / 20,000 calls took 0.6 / 2.5 / 10 / 439 s (quadratic)
    small = min(_parse_seconds(2_000, True) for _ in range(2))
    big = _parse_seconds(20_000, True)
    assert big < 20, f"20,000 chained calls took {big:.1f}s"
    assert big < 40 * max(small, 0.01), f"10x the calls took {big / small:.0f}x the time (quadratic is 100x)"


def test_chain_too_long_to_name_counts_as_unresolved() -> None:
    source, text = _chain_file(MAX_CHAIN_PARTS, in_function=True)
    facts = parse_file("gen.py", "gen", source, text, is_package=False)
    [fn] = [d for d in facts.definitions if d.name == "f"]
    chains = [c.chain for c in fn.calls]
    assert chains[0] is None  # the outermost: 2 * 64 parts
    assert max(len(c) for c in chains if c is not None) <= MAX_CHAIN_PARTS
    assert ("a", "m") in chains  # the innermost call is still named


_ATOMS = st.sampled_from(["a", "self", "x1", '"s"', "[1]", "super()", "(a)", "f(1)[0]"])
_STEPS = st.lists(st.sampled_from([".m", ".n", "()", "(1, 2)"]), max_size=90)


@FAST
@given(atom=_ATOMS, steps=_STEPS)
def test_property_memoised_chains_equal_plain_chains(atom: str, steps: list[str]) -> None:
    expr = atom + "".join(steps)
    tree = parser().parse(f"{expr}\n".encode())
    memo: dict = {}
    nodes = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.children)
    for node in sorted(nodes, key=lambda n: n.start_byte - n.end_byte):  # outermost first, as the walk does
        plain = chain_of(node)
        assert chain_of(node, memo) == plain
        assert plain is None or len(plain) <= MAX_CHAIN_PARTS


def test_code_files_over_the_size_or_time_budget_are_skipped_with_a_record(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "small.py").write_text("def ok():\n    return 1\n", encoding="utf-8")
    (repo / "big.py").write_text("x = 1\n" * 50_000, encoding="utf-8")  # 300 kB
    files, skipped = parse_tree(repo, max_bytes=100_000)
    assert [f.path for f in files] == ["small.py"]
    assert [(s.path, s.reason) for s in skipped] == [("big.py", "too_large")]
    assert "300,000 bytes" in skipped[0].message and "GRAPHRAG_CODE_MAX_FILE_BYTES" in skipped[0].message
    files, skipped = parse_tree(repo, max_seconds=1e-6)  # any file past the first clock look
    assert [(s.path, s.reason) for s in skipped] == [("big.py", "too_slow")]
    assert "GRAPHRAG_CODE_MAX_FILE_SECONDS" in skipped[0].message


# --------------------------------------------------------------------------- 3. failure reasons
class _Chat(BaseChatModel):
    """Raises llama.cpp's context error when the user prompt is longer than ``limit`` characters,
    answers ``answer`` otherwise."""

    limit: int = 10_000
    answer: str = EMPTY_ANSWER
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "test"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        size = sum(len(str(m.content)) for m in messages if not isinstance(m, SystemMessage))
        if size > self.limit:
            raise ValueError(f"Requested tokens ({size}) exceed context window of {self.limit}")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.answer))])


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "doc.txt").write_text("Un párrafo corto que cabe.\n\n" + "Un párrafo largo que no cabe. " * 20 + "\n",
                                    encoding="utf-8")
    return corpus


def test_context_overflow_is_named_and_retried_once_the_settings_change(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10)
    onto = Ontology.from_file(GOT)
    first = run_extraction(settings.extract, onto, corpus, chat=_Chat(limit=500), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    lines = "\n".join(first.lines())
    assert first.failed_by_reason == {"context_overflow": 1}
    assert "context overflow 1" in lines and "GRAPHRAG_LLAMACPP_N_CTX" in lines and "--retry-failed" in lines
    assert "unusable" not in lines and "zero LLM calls" not in lines and first.llm_calls == 2
    [failed] = json.loads(first.out_path.read_text(encoding="utf-8"))["failed_chunks"]
    assert failed["reason"] == "context_overflow"

    same = _Chat(limit=500)
    again = run_extraction(settings.extract, onto, corpus, chat=same, files=settings.files, chunking=settings.chunking, llm=settings.llm)  # nothing changed: the failure is reused
    assert same.calls == 0 and again.failed_by_reason == {"context_overflow": 1}
    assert "all cached, 1 of them failures" in "\n".join(again.lines())

    bigger = _Chat(limit=100_000)
    cfg = settings.with_overrides(llamacpp_n_ctx=16384)
    fixed = run_extraction(cfg.extract, onto, corpus, chat=bigger, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert bigger.calls == 1 and fixed.failed_chunks == 0 and fixed.retried_failures == 1


def test_unusable_answer_is_named_with_its_advice(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10)
    corpus = _corpus(tmp_path)
    summary = run_extraction(settings.extract, Ontology.from_file(GOT), corpus, chat=_Chat(answer="no json"), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    lines = "\n".join(summary.lines())
    assert summary.failed_by_reason == {"unusable_answer": 2}
    assert "unusable answer 2" in lines and "--retry-failed" in lines
    rerun = _Chat()
    cfg = settings.with_overrides(llamacpp_n_ctx=16384)
    run_extraction(cfg.extract, Ontology.from_file(GOT), corpus, chat=rerun, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert rerun.calls == 0  # what the model wrote does not depend on the context size


@FAST
@given(status=st.sampled_from(["ok", "failed"]), reason=st.sampled_from([None, *[r.value for r in FailureReason]]),
       stored=st.sampled_from(["A", "B", None]), current=st.sampled_from(["A", "B"]), flag=st.booleans())
def test_property_which_stored_answers_are_asked_again(status, reason, stored, current, flag) -> None:
    rec = CacheRecord(status=status, error="x", reason=reason if status == "failed" else None, setup=stored)
    retry = should_retry(rec, current, flag)
    if status == "ok":
        assert not retry
    elif flag or reason == "provider":
        assert retry
    elif reason == "context_overflow":
        assert retry == (stored != current)
    else:
        assert not retry


def test_legacy_failed_record_is_classified_by_its_error_text() -> None:
    rec = CacheRecord(status="failed", error="the prompt does not fit in the model's context window (x)")
    assert rec.failure_reason is FailureReason.CONTEXT_OVERFLOW
    assert CacheRecord(status="failed", error="no valid JSON").failure_reason is FailureReason.UNUSABLE_ANSWER


# --------------------------------------------------------------------------- 4. unreadable notes
def _bad_vault(root: Path) -> Path:
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nA perfectly ordinary note about Prometheus and Grafana.\n",
                                  encoding="utf-8")
    (root / "latin1.md").write_bytes("# L\n\nSeñor de Invernalia.\n".encode("latin-1"))
    (root / "utf16.md").write_bytes("# U\n\nTexto en UTF-16.\n".encode("utf-16"))
    (root / "image.md").write_bytes(b"GIF89a\x01\x00\x01\x00\x00\xff\x00,")
    (root / "yaml.md").write_text("---\ntitle: ok\ntags: [a, b\n---\n# Y\n\nBody text.\n", encoding="utf-8")
    return root


def test_unreadable_notes_are_skipped_with_a_record_and_strict_stops(tmp_path: Path) -> None:
    vault = _bad_vault(tmp_path / "vault")
    skipped: list = []
    docs = read_corpus(vault, min_chars=10, max_chars=1500, skipped=skipped)
    assert [d.document.id for d in docs] == ["good.md"]
    assert {s.path: s.reason for s in skipped} == {"image.md": "binary", "latin1.md": "not_utf8",
                                                   "utf16.md": "utf16", "yaml.md": "front_matter"}
    assert all(s.message and not s.message.startswith(str(vault)) for s in skipped)
    with pytest.raises(CorpusError, match=r"image\.md, line 1: a NUL byte"):
        read_corpus(vault, min_chars=10, max_chars=1500, strict=True)


def test_extract_records_skipped_notes_and_the_cli_strict_flag_exits_non_zero(tmp_path: Path, capsys) -> None:
    vault = _bad_vault(tmp_path / "vault")
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10)
    summary = run_extraction(settings.extract, Ontology.from_file(GOT), vault, chat=_Chat(), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert len(summary.skipped_files) == 4
    assert any(line.startswith("  files skipped: 4") for line in summary.lines())
    assert Extraction.read(summary.out_path).counts.files_skipped == 4
    code = main(["--ontology", str(GOT), "--out", str(tmp_path / "out2"), "extract", str(vault), "--strict"])
    assert code == 1
    err = capsys.readouterr().err
    assert "image.md" in err and "--strict" in err


def _big_vault(root: Path) -> Path:
    root.mkdir()
    (root / "small.md").write_text("# Small\n\nA short note about Prometheus that is read as usual.\n", encoding="utf-8")
    (root / "huge.md").write_text("# Huge\n\n" + "Una frase que se repite sin fin en la nota. " * 500,
                                  encoding="utf-8")  # about 22 kB
    return root


def test_documents_over_the_size_cap_are_skipped_with_a_record(tmp_path: Path) -> None:
    """A note (or corpus file) over GRAPHRAG_MAX_DOCUMENT_BYTES is skipped with a `too_large` record
    saying its size, the cap and the setting, before it is read; a single file over it is an error;
    0 means no cap (issue 37: a 50 MB note became 32,890 LLM calls without a word)."""
    vault = _big_vault(tmp_path / "vault")
    skipped: list = []
    docs = read_corpus(vault, min_chars=10, max_chars=1500, max_bytes=10_000, skipped=skipped)
    assert [d.document.id for d in docs] == ["small.md"]
    assert [(s.path, s.reason) for s in skipped] == [("huge.md", "too_large")]
    message, size = skipped[0].message, (vault / "huge.md").stat().st_size
    assert f"{size:,} bytes" in message and "10,000" in message and "GRAPHRAG_MAX_DOCUMENT_BYTES" in message, message
    assert "about 15 chunks" in message, message  # what reading it would cost, at max_chars per chunk
    with pytest.raises(CorpusError, match="GRAPHRAG_MAX_DOCUMENT_BYTES"):
        read_corpus(vault / "huge.md", min_chars=10, max_chars=1500, max_bytes=10_000)
    with pytest.raises(CorpusError, match="huge.md.*GRAPHRAG_MAX_DOCUMENT_BYTES"):
        read_corpus(vault, min_chars=10, max_chars=1500, max_bytes=10_000, strict=True)
    assert len(read_corpus(vault, min_chars=10, max_chars=1500, max_bytes=0)) == 2  # no cap

    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10, max_document_bytes=10_000)
    chat = _Chat()
    summary = run_extraction(settings.extract, Ontology.from_file(NOTES), vault, chat=chat, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert chat.calls == 1 and summary.documents == 1
    assert any(line.startswith("  files skipped: 1") and "too_large" in line for line in summary.lines())
    [record] = Extraction.read(summary.out_path).skipped_files
    assert (record.path, record.reason) == ("huge.md", "too_large")


def test_a_long_run_says_first_how_many_chunks_and_how_long(tmp_path: Path, caplog, capsys, monkeypatch) -> None:
    """Before asking the model about more than GRAPHRAG_ANNOUNCE_CHUNKS chunks, the run says how many
    and the time it expects: from this model's measured seconds per chunk once a run measured them
    (the CLI prints it: a warning on stderr)."""
    import logging

    def corpus(name: str, words: str) -> Path:
        folder = tmp_path / name
        folder.mkdir(exist_ok=True)
        (folder / "doc.txt").write_text("\n\n".join(f"Párrafo {i} {words}, con bastante texto." for i in range(3)),
                                        encoding="utf-8")
        return folder

    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10, announce_chunks=2)
    onto = Ontology.from_file(GOT)
    caplog.set_level(logging.WARNING, logger="graphrag_got")

    def announced() -> list[str]:
        lines = [r.getMessage() for r in caplog.records if "chunks to ask the model" in r.getMessage()]
        caplog.clear()
        return lines

    run_extraction(settings.extract, onto, corpus("a", "sobre el norte"), chat=_Chat(), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    [first] = announced()
    assert first.startswith("3 chunks to ask the model") and "no measured time for" in first, first
    run_extraction(settings.extract, onto, corpus("b", "sobre el sur"), chat=_Chat(), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    [second] = announced()
    assert second.startswith("3 chunks to ask the model") and "measured" in second and "per chunk" in second, second
    cfg = settings.with_overrides(announce_chunks=3)
    run_extraction(cfg.extract, onto, corpus("c", "sobre el este"), chat=_Chat(), files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert announced() == []  # not more than the setting: nothing to announce
    run_extraction(settings.extract, onto, corpus("a", "sobre el norte"), chat=_Chat(), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert announced() == []  # all cached: no call to announce

    replay = tmp_path / "replay.json"
    docs = read_corpus(corpus("d", "sobre el oeste"), min_chars=10, max_chars=1500)
    replay.write_text(json.dumps({"responses": [{"chunk_hash": c.hash, "responses": [EMPTY_ANSWER]}
                                                for d in docs for c in d.chunks]}), encoding="utf-8")
    monkeypatch.setenv("GRAPHRAG_ANNOUNCE_CHUNKS", "2")
    code = main(["--ontology", str(GOT), "--home", str(tmp_path / "home"), "--out", str(tmp_path / "out3"),
                 "--provider", "replay", "--replay-file", str(replay), "extract", str(tmp_path / "d")])
    assert code == 0
    assert "3 chunks to ask the model" in " ".join(capsys.readouterr().err.split())


@FAST
@given(blobs=st.lists(st.binary(max_size=60), min_size=1, max_size=6))
def test_property_every_file_is_read_or_recorded_never_an_error(tmp_path_factory, blobs: list[bytes]) -> None:
    root = tmp_path_factory.mktemp("vault")
    (root / "anchor.md").write_text("# Anchor\n\nA note that can always be read and chunked.\n", encoding="utf-8")
    for i, blob in enumerate(blobs):
        (root / f"n{i}.md").write_bytes(blob)
    skipped: list = []
    docs = read_corpus(root, min_chars=5, max_chars=500, skipped=skipped)
    read = {d.document.id for d in docs}
    assert read.isdisjoint({s.path for s in skipped})
    assert read | {s.path for s in skipped} == {"anchor.md", *(f"n{i}.md" for i in range(len(blobs)))}


# --------------------------------------------------------------------------- 5. capped messages
def test_an_array_ontology_does_not_echo_the_file(tmp_path: Path) -> None:
    path = tmp_path / "arr.json"
    path.write_text(json.dumps([{"x": "y" * 100}] * 40_000), encoding="utf-8")  # 4.4 MB
    with pytest.raises(OntologyError) as info:
        Ontology.from_file(path)
    message = str(info.value)
    assert len(message) < 600
    assert "the top level of an ontology must be an object, got an array of 40000 item(s)" in message


@FAST
@given(value=st.one_of(st.text(min_size=1000, max_size=5000), st.integers(),
                       st.lists(st.text(max_size=200), min_size=50, max_size=100),
                       st.dictionaries(st.text(min_size=300, max_size=400), st.text(max_size=2000), min_size=1,
                                       max_size=4)))
def test_property_ontology_errors_stay_short_whatever_the_value(value) -> None:
    for data in (value, {"clases": value, "relaciones": value}, {"clases": {"P": {"propiedades": value}},
                                                               "relaciones": [{"nombre": "R", "dominio": "P",
                                                                               "rango": "P"}]}):
        try:
            Ontology.from_dict(data)
        except OntologyError as exc:
            assert max(len(line) for line in str(exc).splitlines()) < 800


@given(text=st.text(max_size=3000), limit=st.integers(min_value=1, max_value=500))
def test_property_cap_text_keeps_a_prefix_and_says_what_was_cut(text: str, limit: int) -> None:
    out = cap_text(text, limit)
    if len(text) <= limit:
        assert out == text
    else:
        assert out.startswith(text[:limit]) and f"[{len(text) - limit:,} more characters]" in out


# --------------------------------------------------------------------------- 6. enum collisions
def _onto_with_enum(values: list[str]) -> dict:
    return {"clases": {"P": {"propiedades": {"k": "enum: " + " | ".join(values)}}},
            "relaciones": [{"nombre": "R", "dominio": "P", "rango": "P"}]}


def test_enum_values_equal_after_normalization_are_refused() -> None:
    with pytest.raises(OntologyError, match=r"enum values 'a' and 'A' are the same once case"):
        Ontology.from_dict(_onto_with_enum(["a", "A"]))
    with pytest.raises(OntologyError, match=r"'norte' and 'Nórte'"):
        Ontology.from_dict(_onto_with_enum(["norte", "sur", "Nórte"]))


@FAST
@given(values=st.lists(st.text(alphabet=string.ascii_letters + "áéÁÉ", min_size=1, max_size=6), min_size=1,
                       max_size=5, unique=True))
def test_property_enum_accepted_iff_normalized_values_are_distinct(values: list[str]) -> None:
    from graphrag_got.common.normalize import normalize_name

    distinct = len({normalize_name(v) for v in values}) == len(values)
    try:
        Ontology.from_dict(_onto_with_enum(values))
        accepted = True
    except OntologyError as exc:
        accepted = False
        assert "the same once case" in str(exc)
    assert accepted == distinct


# --------------------------------------------------------------------------- 7. a vault with links, built
@pytest.mark.neo4j
def test_build_of_a_vault_with_outside_links_keeps_their_text_out_of_the_graph(clean_graph, neo4j_settings,
                                                                              tmp_path: Path) -> None:
    from graphrag_got.llm.replay import ReplayChatModel
    from graphrag_got.pipeline.build import run_build

    _, vault = _outside_and_vault(tmp_path)
    (vault / "bad.md").write_bytes(b"# Bad\n\nSe\xf1or.\n")  # skipped, the build goes on
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", ontology_path=NOTES,
                                             embeddings=False)

    class Chat(ReplayChatModel):
        seen: list[str] = []  # noqa: RUF012 (a pydantic field, copied per instance)

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
            self.seen.append("\n".join(str(m.content) for m in messages))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=EMPTY_ANSWER))])

    chat = Chat(responses={}, seen=[])
    lines: list[str] = []
    result = run_build(settings, vault, chat=chat, communities=False, say=lines.append)
    assert result.llm_calls["extract"] == 2  # alias.md (a link inside the vault) and notes/ok.md
    assert not any(SECRET in prompt for prompt in chat.seen)
    said = "\n".join(lines)
    assert "files skipped: 5" in said and "passwd.md (outside_root)" in said
    extraction = result.extraction_path.read_text(encoding="utf-8")
    assert SECRET not in extraction
    with clean_graph.session() as s:
        texts = [r[0] for r in s.run("MATCH (n) UNWIND keys(n) AS k WITH n[k] AS v WHERE v IS :: STRING RETURN v")]
        ids = sorted(r[0] for r in s.run("MATCH (d:Document) RETURN d.id"))
    assert texts and not any(SECRET in t for t in texts)
    assert ids == ["alias.md", "notes/ok.md"]


def test_the_discarded_report_lists_files_not_read_and_failure_reasons(tmp_path: Path) -> None:
    from graphrag_got.report.discarded_build import build_report
    from graphrag_got.report.discarded_render import to_markdown

    vault = _bad_vault(tmp_path / "vault")
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10)
    summary = run_extraction(settings.extract, Ontology.from_file(GOT), vault, chat=_Chat(answer="no json"), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    text = to_markdown(build_report(Extraction.read(summary.out_path), GOT))
    assert "## Files not read" in text and "latin1.md" in text and "not valid UTF-8" in text
    assert "unusable answer: no valid JSON" in text

"""Prompt overrides: GRAPHRAG_PROMPTS_DIR holds one ``<prompt name>.txt`` per prompt replaced (placeholders
checked at load); a custom prompt is part of the cache keys and its version is printed; ``graphrag-got prompts
export DIR`` writes the prompts in use to start from."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_got import prompts as P
from graphrag_got.cli import main
from graphrag_got.common.prompt_files import PromptTemplate, export_prompt_set, readme_text
from graphrag_got.communities.reports import summary_key
from graphrag_got.config import Settings
from graphrag_got.errors import PromptError
from graphrag_got.extract.cache import ExtractionCache
from graphrag_got.extract.classify.cache import call_key
from graphrag_got.extract.extraction import Extraction, RelationRecord
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.validate import ChunkValidation
from graphrag_got.extract.verify import claims_of
from graphrag_got.llm.replay import ReplayChatModel
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parent.parent
GOT = Ontology.from_file(ROOT / "ontology" / "got.json")
RECORDED = ROOT / "tests" / "data" / "recorded" / "got-qwen2.5-coder-1.5b.json"
EDIT = "Write every name exactly as the text spells it."


def _every_prompt(prompts: P.PromptSet | None) -> dict[str, str]:
    """Every prompt function's text for a few inputs, under ``prompts``."""
    kw: dict[str, Any] = {"prompts": prompts}
    out = {"extract.system": P.extraction_system_prompt(GOT, **kw),
           "extract.system.compact": P.extraction_system_prompt(GOT, "compact", **kw),
           "extract.user": P.extraction_user_prompt("Un texto con $5 y {llaves}.", **kw),
           "classify.system": P.classify_system_prompt(GOT, **kw), "classify.text": P.classify_text_block("t", **kw),
           "classify.mentions": P.classify_mentions_task(**kw),
           "classify.choice": P.classify_choice_question("p", [("A", "x R y"), ("B", P.NO_RELATION)], **kw),
           "verify.system": P.verification_prompt(**kw),
           "verify.question": P.verification_question("A", "P", "R", "c.", "B", "Q", {"momento": "m"}, "p", **kw),
           "search.anchor": P.anchor_prompt(list(GOT.classes), **kw), "search.route": P.route_classifier_prompt(**kw),
           "search.drift_primer": P.drift_primer_prompt(3, "English", **kw)}
    for lang in (None, "English"):
        out.update({f"communities.report|{lang}": P.community_summary_prompt(lang, **kw),
                    f"search.local|{lang}": P.local_answer_prompt(lang, **kw), f"search.map|{lang}": P.map_prompt(lang, **kw),
                    f"search.reduce|{lang}": P.reduce_prompt(lang, **kw),
                    f"search.drift_answer|{lang}": P.drift_answer_prompt(lang, **kw),
                    f"search.claims|{lang}": P.claims_answer_prompt(lang, 4, **kw)})
    return out


def _keys(prompts: P.PromptSet, tmp_path: Path) -> dict[str, str]:
    """The cache keys the prompts in use go into (extraction answers, classify calls, verdicts, reports)."""
    rel = RelationRecord(subject="A", subject_key="a", subject_type="Personaje", relation="CASADO_CON", object="B",
                         object_key="b", object_type="Personaje")
    (claim,) = claims_of([ChunkValidation("c", "d", relations=[rel])], {"c": "A y B"}, GOT, prompts=prompts)
    return {"extract": str(ExtractionCache(tmp_path, "m", 40, 60, prompt_version=prompts.version(*P.EXTRACT_PROMPTS)).dir),
            "classify": call_key("choice", "s", "u", prompts.version(*P.CLASSIFY_PROMPTS)), "verify": claim.key,
            "report": summary_key("content", "m", None, prompts.version(P.COMMUNITY_REPORT))}


def test_exported_prompts_load_as_the_built_in_ones_with_the_same_cache_keys(tmp_path: Path) -> None:
    export_prompt_set(P.BUILTIN, tmp_path / "prompts", readme=readme_text(P.BUILTIN))
    files = sorted(p.name for p in (tmp_path / "prompts").glob("*.txt"))
    assert files == sorted(f"{name}.txt" for name in P.TEMPLATES) and len(files) == len(P.TEMPLATES) >= 18
    loaded = P.load_prompts(tmp_path / "prompts")
    assert not any(loaded[n].custom for n in P.TEMPLATES) and all(loaded[n].source is not None for n in P.TEMPLATES)
    assert _every_prompt(loaded) == _every_prompt(None)
    assert _keys(loaded, tmp_path) == _keys(P.BUILTIN, tmp_path)
    assert loaded.version(*P.EXTRACT_PROMPTS) == P.EXTRACTION_VERSION
    assert loaded["extract.system"].line().startswith("prompt extract.system: built-in extract-v4 (")


def test_an_edited_prompt_is_used_and_changes_only_its_own_keys(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    builtin = P.TEMPLATES["extract.system"].text
    (folder / "extract.system.txt").write_text(builtin.replace("${rules}", "${rules}\n" + EDIT) + "\n", encoding="utf-8")
    (folder / "search.map.txt").write_text("Rate the report $$-free, ${language}.\n", encoding="utf-8")
    custom = P.load_prompts(folder)
    assert EDIT in P.extraction_system_prompt(GOT, prompts=custom)
    assert P.map_prompt("English", prompts=custom) == "Rate the report $-free, in English."
    before, after = _keys(P.BUILTIN, tmp_path), _keys(custom, tmp_path)
    assert after["extract"] != before["extract"] and {k: after[k] for k in ("classify", "verify", "report")} == \
        {k: before[k] for k in ("classify", "verify", "report")}
    prompt = custom["extract.system"]
    assert prompt.custom and prompt.version == f"extract-v4+sha256:{prompt.digest[:16]}"
    assert custom.version(*P.EXTRACT_PROMPTS) == f"extract-v4+extract.system@sha256:{prompt.digest[:16]}"
    assert prompt.line() == f"prompt extract.system: custom sha256:{prompt.digest[:8]} from {folder.resolve()}/extract.system.txt"


class _Recording(ReplayChatModel):
    """The recorded answers, keeping the system prompt of every call."""

    systems: list[str] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.systems.append(str(messages[0].content))
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_an_extraction_asks_again_under_an_edited_prompt_and_hits_the_cache_otherwise(tmp_path: Path) -> None:
    recorded = ReplayChatModel.from_file(RECORDED)
    chat = _Recording(responses=recorded.responses, source=recorded.source, systems=[])
    base = Settings().with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out")

    def run(prompts_dir: Path | None) -> tuple[int, str]:
        cfg = base.with_overrides(prompts_dir=prompts_dir)
        summary = run_extraction(cfg.extract, GOT, ROOT / "corpus" / "got.txt",
                                 chat=chat, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
        return summary.llm_calls, Extraction.read(summary.out_path).prompt_version

    first, version = run(None)
    assert first > 0 and version == "extract-v4"
    export_prompt_set(P.BUILTIN, tmp_path / "exported")
    assert run(tmp_path / "exported") == (0, "extract-v4")  # the exported prompts are the built-in ones: cached
    path = tmp_path / "exported" / "extract.system.txt"
    path.write_text(path.read_text(encoding="utf-8").replace("${examples}", f"{EDIT}\n\n${{examples}}"), encoding="utf-8")
    chat.systems.clear()
    calls, version = run(tmp_path / "exported")
    assert calls == first and version.startswith("extract-v4+extract.system@sha256:")  # asked again, every chunk
    assert chat.systems and all(EDIT in s for s in chat.systems)  # and the edited prompt is what was sent
    assert run(tmp_path / "exported") == (0, version)  # the custom prompt's answers are cached too
    assert run(None) == (0, "extract-v4")  # and the built-in ones are still there


@pytest.mark.parametrize("name, text, expected", [
    ("extract.sytem.txt", "x", "no prompt is named 'extract.sytem'"),
    ("extract.user.txt", "Extract the entities of this text.", "the required placeholder ${text} is missing"),
    ("extract.user.txt", "TEXT: ${text} in ${langauge}", ":1: unknown placeholder ${langauge} (this prompt has: ${text})"),
    ("search.map.txt", "Costs 5$ per ${language}", ":1:8: a '$' that starts no placeholder"),
    ("search.map.txt", "line one\n${language} ${unclosed", ":2:13: a '$' that starts no placeholder"),
])
def test_a_bad_prompt_file_is_a_clear_error_naming_the_file_and_the_placeholder(tmp_path: Path, name: str, text: str,
                                                                               expected: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(PromptError) as err:
        P.load_prompts(tmp_path)
    assert f"{tmp_path.resolve() / name}" in str(err.value) and expected in str(err.value)


def test_unreadable_files_and_folders_are_clear_errors_and_other_files_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("notes ${nothing}", encoding="utf-8")
    (tmp_path / "extract.user.txt").write_bytes(b"TEXT: \xff ${text}")
    with pytest.raises(PromptError, match=r"extract\.user\.txt: not UTF-8 text"):
        P.load_prompts(tmp_path)
    with pytest.raises(PromptError, match="does not exist"):
        P.load_prompts(tmp_path / "missing")
    (tmp_path / "extract.user.txt").write_text("TEXT:\r\n${text}\r\n", encoding="utf-8")  # CRLF, final newline
    assert P.extraction_user_prompt("x", prompts=P.load_prompts(tmp_path)) == "TEXT:\nx"


def _fifo(tmp_path: Path) -> Path:
    import os

    os.mkfifo(tmp_path / "extract.user.txt")
    return tmp_path / "extract.user.txt"


@pytest.mark.parametrize("make, what", [
    (lambda d: (d / "extract.user.txt").mkdir(), "a folder, not a regular file, so it was not read"),
    (_fifo, "a named pipe (FIFO), not a regular file, so it was not read"),
    (lambda d: (d / "extract.user.txt").symlink_to("/dev/zero"),
     "a character device (a symbolic link to /dev/zero), not a regular file, so it was not read"),
    (lambda d: (d / "extract.user.txt").symlink_to(d / "gone.txt"),
     "a symbolic link to {d}/gone.txt, which does not exist"),
    (lambda d: (d / "extract.user.txt").symlink_to("extract.user.txt"), "cannot be read (a symbolic link to "
                                                                         "extract.user.txt)"),
], ids=["folder", "fifo", "dev-zero", "dangling-link", "link-loop"])
def test_an_override_that_is_not_a_regular_file_is_an_error_naming_it_and_is_never_opened(tmp_path: Path, make,  # type: ignore[no-untyped-def]
                                                                                         what: str) -> None:
    """A ``<prompt>.txt`` the user placed that cannot be a prompt is an error naming the path and what it
    is (it was silently ignored: the built-in prompt ran instead). A pipe or a device is never opened: the
    load returns at once (opening a pipe would wait for a writer, reading /dev/zero would never end)."""
    import threading

    make(tmp_path)
    (tmp_path / "search.map.txt").write_text("Rate the report ${language}.\n", encoding="utf-8")  # a good one
    outcome: list[BaseException | object] = []

    def load() -> None:
        try:
            outcome.append(P.load_prompts(tmp_path))
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert outcome, "loading the prompts hung on the entry (it was opened)"
    err = outcome[0]
    assert isinstance(err, PromptError), err
    assert f"{tmp_path.resolve()}/extract.user.txt: {what.format(d=tmp_path)}" in str(err), str(err)
    assert "1 problem(s)" in str(err)
    (tmp_path / "extract.user.txt").unlink() if not (tmp_path / "extract.user.txt").is_dir() else \
        (tmp_path / "extract.user.txt").rmdir()
    assert P.map_prompt("English", prompts=P.load_prompts(tmp_path)) == "Rate the report in English."


def test_a_template_is_checked_when_registered() -> None:
    with pytest.raises(ValueError, match="text"):
        PromptTemplate("x.y", "x-v1", "no placeholder", required=("text",))
    with pytest.raises(ValueError, match="registered twice"):
        P.template("extract.user", "v", "${text}")


def test_every_call_of_a_prompt_function_passes_the_prompts_in_use() -> None:
    """A call without ``prompts=`` would send the built-in text whatever GRAPHRAG_PROMPTS_DIR says. Module-level
    constants (the default forms, kept as names of their modules) are the only exception."""
    functions = {n for n in P.__all__ if callable(getattr(P, n)) and n.endswith(("_prompt", "_question", "_block",
                                                                                  "_task"))}
    missing = []
    for path in (ROOT / "graphrag_got").rglob("*.py"):
        if path.parent.name == "prompts" and path.parent.parent.name == "graphrag_got":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {id(node.value) for node in tree.body if isinstance(node, ast.Assign)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions \
                    and id(node) not in constants and not any(k.arg == "prompts" for k in node.keywords):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.func.id}")
    assert missing == []


def test_cli_export_refuses_to_overwrite_and_extract_prints_the_custom_prompt_first(tmp_path: Path, capsys,
                                                                                     monkeypatch) -> None:
    folder = tmp_path / "prompts"
    assert main(["prompts", "export", str(folder)]) == 0
    assert f"wrote {len(P.TEMPLATES)} prompt files and README.md" in capsys.readouterr().out
    assert "| `extract.user.txt` | extract-v4 | `${text}`* |" in (folder / "README.md").read_text(encoding="utf-8")
    assert main(["prompts", "export", str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"{len(P.TEMPLATES) + 1} file(s) would be overwritten" in err and "--force" in err
    assert main(["prompts", "export", str(folder), "--force"]) == 0
    capsys.readouterr()
    (folder / "extract.user.txt").write_text("TEXT:\n${text}\n\nList the entities and relations as JSON.\n")
    monkeypatch.setenv("GRAPHRAG_PROMPTS_DIR", str(folder))
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps(json.loads(RECORDED.read_text(encoding="utf-8"))), encoding="utf-8")
    argv = ["--home", str(tmp_path / "home"), "--out", str(tmp_path / "out"), "--provider", "replay", "--replay-file",
            str(replay), "extract", str(ROOT / "corpus" / "got.txt")]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    digest = P.load_prompts(folder)["extract.user"].digest
    assert lines[0] == f"prompt extract.system: built-in extract-v4 ({folder.resolve()}/extract.system.txt is the built-in text)"
    assert lines[1] == f"prompt extract.user: custom sha256:{digest[:8]} from {folder.resolve()}/extract.user.txt"
    assert main(["prompts", "list"]) == 0
    assert f"extract.user          extract-v4        custom sha256:{digest[:8]}" in capsys.readouterr().out
    (folder / "extract.user.txt").write_text("no text here\n")
    assert main(argv) == 1
    assert f"{folder.resolve()}/extract.user.txt: the required placeholder ${{text}} is missing" in capsys.readouterr().err


def test_the_custom_prompts_page_names_every_prompt_and_its_placeholders() -> None:
    page = (ROOT / "docs" / "guides" / "custom-prompts.md").read_text(encoding="utf-8")
    for name, tpl in P.TEMPLATES.items():
        assert f"`{name}`" in page, f"add {name} to docs/guides/custom-prompts.md"
        for placeholder in tpl.placeholders:
            star = "*" if placeholder in tpl.required else ""
            assert f"`${{{placeholder}}}`{star}" in page, (name, placeholder)

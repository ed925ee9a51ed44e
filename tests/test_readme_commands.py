"""README.md is the front door: small, its links lead somewhere, and every command it shows runs.

Each command of README's code blocks and prose is checked against the real thing
(``tests/markdown_commands.py``: the CLI parser, the scripts), and :data:`EXERCISED` names the test
that runs it end to end, so a command added to README without one fails here until it gets one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from markdown_commands import (
    REPO,
    block_commands,
    cli_function,
    inline_commands,
    problem,
)

README = REPO / "README.md"
MAX_BYTES = 12 * 1024

#: The command function (or script) of each README command -> (the test that runs it end to end, a
#: string that test's body must contain to show it does). None: not run by a test, and why.
EXERCISED: dict[str, tuple[str, str] | str] = {
    "scripts/demo.sh": ("tests/test_pipeline.py::test_demo_honours_the_community_settings", "run_demo"),
    "scripts/test.sh": "it is the test run itself: CI runs .ci/run, which runs scripts/test.sh",
    "graphrag_got.commands.doctor.run": (
        "tests/test_providers.py::test_doctor_shows_the_pool_the_model_the_context_and_a_latency", '"doctor"'),
    "graphrag_got.commands.ontology.run_show": (
        "tests/test_prompts.py::test_cli_show_prompt_prints_the_exact_system_prompt_and_its_version", '"--prompt"'),
    "graphrag_got.commands.report.run": ("tests/test_report.py::test_command_run_writes_and_prints", '"report"'),
    "graphrag_got.commands.review.run": ("tests/test_review.py::test_the_command_writes_the_pages", "_cli("),
    "graphrag_got.commands.examples.run": (
        "tests/test_teach_examples.py::test_add_through_an_editor_then_extract_asks_again_and_remove_returns_to_the_cache",
        '"suggest"'),
    "graphrag_got.commands.eval.run": (
        "tests/test_teach_examples.py::test_eval_equals_the_benchmark_scorer_on_the_same_passages", '"eval"'),
    "graphrag_got.commands.load.run_stats": (
        "tests/test_load_integrity.py::test_stats_strict_fails_on_a_graph_that_differs_from_its_file", '"--strict"'),
    "graphrag_got.commands.extract.run": (
        "tests/test_repair.py::test_cli_no_repair_flag_turns_repairs_off", '"--revalidate"'),
    "graphrag_got.commands.load.run": (
        "tests/test_load_hardening.py::test_load_command_prints_the_ontology_mismatch", '"load"'),
    "graphrag_got.commands.ask.run_auto": (
        "tests/test_ask_cli.py::test_bare_question_says_the_mode_and_why_and_retrieves_without_llm", '"--no-answer"'),
    "graphrag_got.commands.viz.run": (
        "tests/test_cli.py::test_subcommand_option_of_the_same_name_keeps_its_meaning", '"viz"'),
    "graphrag_got.commands.ask.run_local": (
        "tests/test_ask_cli.py::test_explicit_local_keeps_its_output_and_takes_a_retrieval_mode", '"local"'),
    "graphrag_got.commands.ask.run_global": (
        "tests/test_mode_state.py::test_cli_falls_back_with_a_warning_and_refuses_a_forced_global", '"global"'),
    "graphrag_got.commands.build.run": (
        "tests/test_build.py::test_build_is_incremental_and_prunes_deleted_notes", "run_build"),
}


def _commands():
    return block_commands(README) + inline_commands(README)


def _key(cmd) -> str:
    head = cmd.argv[0]
    if head.startswith("scripts/"):
        return head
    func, message = cli_function(cmd.argv[1:])
    assert func, f"{cmd}: {message}"
    return func


def _test_body(nodeid: str) -> str | None:
    path, _, name = nodeid.partition("::")
    file = REPO / path
    if not file.is_file():
        return None
    source = file.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return ast.get_source_segment(source, node)
    return None


def test_readme_is_the_front_door_and_small() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_BYTES, f"README.md is {size} bytes (at most {MAX_BYTES}): move detail into a docs/ page"


def test_readme_shows_the_two_commands_exactly() -> None:
    argv = [c.argv for c in block_commands(README)]
    assert argv[:2] == [("scripts/demo.sh",), ("scripts/test.sh",)]
    assert "scripts/test.sh" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_shows_commands_and_every_one_is_sound() -> None:
    commands = _commands()
    assert len(commands) >= 10, [str(c) for c in commands]  # the two commands and the tour at least
    bad = [f"{c}: {why}" for c in commands if (why := problem(c))]
    assert bad == []


def test_every_readme_command_names_where_it_runs_end_to_end() -> None:
    keys = {_key(c): c for c in _commands() if c.argv}
    missing = [f"{cmd} ({key})" for key, cmd in keys.items() if key not in EXERCISED]
    assert missing == [], "add these README commands to EXERCISED with the test that runs them"
    assert sorted(set(EXERCISED) - set(keys)) == [], "README no longer shows these: remove them from EXERCISED"
    for key in keys:
        entry = EXERCISED[key]
        if isinstance(entry, str):
            assert entry, key
            continue
        nodeid, needle = entry
        body = _test_body(nodeid)
        assert body is not None, f"{key}: {nodeid} is not a test"
        assert needle in body, f"{key}: {nodeid} no longer contains {needle!r}"


def test_the_check_refuses_what_is_wrong(tmp_path: Path) -> None:
    """The checker itself can fail: an unknown flag, a missing script, an unknown variable."""
    page = tmp_path / "page.md"
    page.write_text("```bash\ngraphrag-got extract --no-such-flag\nscripts/nope.sh\n"
                    "GRAPHRAG_NO_SUCH=1 graphrag-got doctor\nrm -rf out\n```\n`graphrag-got lod x`\n", encoding="utf-8")
    found = {c.text: problem(c) for c in block_commands(page) + inline_commands(page)}
    assert "unrecognized arguments: --no-such-flag" in found["graphrag-got extract --no-such-flag"]
    assert found["scripts/nope.sh"] == "scripts/nope.sh does not exist"
    assert "GRAPHRAG_NO_SUCH" in found["GRAPHRAG_NO_SUCH=1 graphrag-got doctor"]
    assert "not a command this check knows" in found["rm -rf out"]
    assert "invalid choice: 'lod'" in found["graphrag-got lod x"]


@pytest.mark.parametrize("target", sorted({m for m in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)",
                                                                 README.read_text(encoding="utf-8"))
                                           if "://" not in m}))
def test_readme_links_lead_to_files(target: str) -> None:
    assert (REPO / target).exists(), f"README links to {target}, which does not exist"

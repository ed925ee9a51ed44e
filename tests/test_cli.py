"""The CLI shell: global options in either position, logging, errors, Ctrl-C, and progress rendering."""

from __future__ import annotations

import io
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from graphrag_got.cli import build_parser, main, settings_from_args, verbosity
from graphrag_got.commands.render import (
    LineRenderer,
    configure_logging,
    format_seconds,
    format_stats,
    progress_bar,
)
from graphrag_got.config import ENV, Settings
from graphrag_got.common.progress import ProgressEvent

REPO = Path(__file__).resolve().parent.parent
GOT_EXTRACTION = REPO / "tests" / "data" / "got_extraction.json"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture()
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ENV.values():
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work



def _settings(argv: list[str]) -> Settings:
    return settings_from_args(build_parser().parse_args(argv))


# --- global options before or after the subcommand ---------------------------------------------

GLOBAL_CASES = [
    ("--ontology", "custom/onto.json", "ontology_path", Path("custom/onto.json")),
    ("--provider", "replay", "llm_provider", "replay"),
    ("--out", "elsewhere", "out_dir", Path("elsewhere")),
    ("--home", "state", "home", Path("state")),
    ("--replay-file", "rec.json", "replay_file", Path("rec.json")),
]


@pytest.mark.parametrize(("flag", "value", "field", "expected"), GLOBAL_CASES)
@pytest.mark.parametrize("command", [["extract", "corpus/"], ["report"], ["ask", "local", "who?"],
                                     ["neo4j", "status"], ["communities", "summarize"]])
def test_global_option_before_or_after_the_command(clean_env, flag, value, field, expected, command):
    before = _settings([flag, value, *command])
    after = _settings([*command, flag, value])
    assert before.flat()[field] == expected
    assert after.flat()[field] == expected
    assert before == after


def test_option_given_before_is_not_reset_by_the_subcommand(clean_env):
    args = build_parser().parse_args(["--provider", "replay", "--out", "o1", "extract", "corpus/"])
    assert args.provider == "replay" and args.out == "o1" and args.corpus == "corpus/"


def test_option_between_nested_subcommands(clean_env):
    s = _settings(["ask", "--provider", "replay", "local", "who?", "--out", "o"])
    assert s.llm.provider == "replay" and s.files.out_dir == Path("o")


def test_later_value_wins(clean_env):
    assert _settings(["--out", "first", "report", "--out", "second"]).files.out_dir == Path("second")


def test_model_goes_to_the_provider_it_is_for(clean_env, monkeypatch):
    assert _settings(["extract", "--provider", "llamacpp", "--model", "my.gguf"]).llm.llamacpp_model == "my.gguf"
    assert _settings(["--model", "llama3:8b", "extract"]).llm.ollama_model == "llama3:8b"
    monkeypatch.setenv("GRAPHRAG_LLM_PROVIDER", "llamacpp")  # the provider may come from the environment
    s = _settings(["extract", "--model", "small.gguf"])
    assert s.llm.llamacpp_model == "small.gguf" and s.llm.ollama_model == "qwen2.5:7b-instruct"


def test_flags_override_the_environment(clean_env, monkeypatch):
    monkeypatch.setenv("GRAPHRAG_OUT", "from-env")
    assert _settings(["report"]).files.out_dir == Path("from-env")
    assert _settings(["report", "--out", "from-flag"]).files.out_dir == Path("from-flag")


def test_env_file_after_the_command(clean_env, tmp_path):
    env = tmp_path / "my.env"
    env.write_text("GRAPHRAG_BATCH_SIZE=17\n")
    assert _settings(["load", "x.json", "--env-file", str(env)]).graph.batch_size == 17


def test_subcommand_option_of_the_same_name_keeps_its_meaning(clean_env, tmp_path, capsys):
    """`viz --out FILE` is the HTML file; the global --out (folder) still works before `viz`."""
    out_dir = tmp_path / "outdir"
    out_dir.mkdir()
    (out_dir / "extraction.json").write_bytes(GOT_EXTRACTION.read_bytes())
    assert main(["--out", str(out_dir), "viz"]) == 0
    assert (out_dir / "graph.html").is_file()
    page = tmp_path / "page.html"
    assert main(["--out", str(out_dir), "viz", "--out", str(page)]) == 0
    assert page.is_file()
    assert f"wrote {page}" in capsys.readouterr().out


def test_global_options_run_a_real_command_in_both_orders(clean_env, tmp_path, capsys):
    onto = tmp_path / "onto.json"
    onto.write_text((REPO / "ontology" / "got.json").read_text(encoding="utf-8"), encoding="utf-8")
    for argv in (["--ontology", str(onto), "ontology", "check"], ["ontology", "check", "--ontology", str(onto)]):
        assert main(argv) == 0
        assert str(onto) in capsys.readouterr().out


def test_help_of_a_subcommand_lists_the_global_options(capsys):
    with pytest.raises(SystemExit):
        main(["extract", "--help"])
    text = capsys.readouterr().out
    assert "global options" in text and "--provider" in text and "--ontology" in text and "--verbose" in text


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


# --- logging ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "count"), [
    ([], 0), (["-v"], 1), (["-vv"], 2), (["--verbose", "--verbose", "--verbose"], 3),
])
def test_verbosity_counts_before_and_after(argv, count):
    p = build_parser()
    assert verbosity(p.parse_args([*argv, "report"])) == count
    assert verbosity(p.parse_args(["report", *argv])) == count
    assert verbosity(p.parse_args(["-v", "ask", "-v", "local", "q"])) == 2


@pytest.mark.parametrize(("argv", "level"), [
    (["ontology", "check"], logging.WARNING),
    (["ontology", "check", "-v"], logging.INFO),
    (["-v", "ontology", "check", "-v"], logging.DEBUG),
])
def test_main_sets_the_log_level(clean_env, argv, level, capsys):
    main(["--ontology", str(REPO / "ontology" / "got.json"), *argv])
    root = logging.getLogger()
    assert root.level == level
    ours = [h for h in root.handlers if type(h).__name__ == "RichHandler"]
    assert len(ours) == 1, "a second main() call must replace the handler, not add one"


def test_log_records_go_to_stderr_only_at_their_level():
    buf = io.StringIO()
    console = Console(file=buf, width=200, color_system=None)
    configure_logging(0, console=console)
    log = logging.getLogger("graphrag_got.some_module")
    log.info("quiet detail")
    log.warning("disk almost full")
    configure_logging(1, console=console)
    log.info("now visible")
    log.debug("still hidden")
    text = buf.getvalue()
    assert "disk almost full" in text and "now visible" in text
    assert "quiet detail" not in text and "still hidden" not in text
    assert sum(1 for h in logging.getLogger().handlers if type(h).__name__ == "RichHandler") == 1


def test_debug_shows_the_settings_but_not_the_password(clean_env, capsys):
    assert main(["-vv", "--ontology", str(REPO / "ontology" / "got.json"), "ontology", "check"]) == 0
    err = capsys.readouterr().err
    assert "settings:" in err and "'neo4j_uri'" in err
    assert "neo4j_password" not in err


# --- errors and Ctrl-C -----------------------------------------------------------------------------


def test_library_error_is_one_line_and_exit_1(clean_env, tmp_path, capsys):
    assert main(["--env-file", str(tmp_path / "missing.env"), "report"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: env file") and "missing.env" in err and "Traceback" not in err


def test_bad_setting_in_the_environment(clean_env, monkeypatch, capsys):
    monkeypatch.setenv("GRAPHRAG_CONCURRENCY", "0")
    assert main(["report"]) == 1
    err = capsys.readouterr().err
    assert "error: invalid setting(s):" in err and "GRAPHRAG_CONCURRENCY = '0'" in err


def test_ctrl_c_exits_130_with_one_line(clean_env, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Settings, "load", classmethod(lambda cls, *a, **k: interrupted()))
    assert main(["report"]) == 130
    captured = capsys.readouterr()
    assert captured.err == "interrupted\n" and captured.out == ""


def test_second_ctrl_c_during_cleanup_is_still_one_line(clean_env, monkeypatch, capsys):
    def interrupted_twice(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        finally:
            raise KeyboardInterrupt  # the user pressed Ctrl-C again while cleaning up

    monkeypatch.setattr(Settings, "load", classmethod(lambda cls, *a, **k: interrupted_twice()))
    assert main(["report"]) == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored for the caller


def test_real_sigint_twice_prints_no_traceback(tmp_path):
    """A real process: first Ctrl-C while working, a second one during the cleanup it triggers."""
    script = textwrap.dedent("""
        import sys, time
        from graphrag_got import cli
        from graphrag_got.config import Settings

        def slow(cls, *args, **kwargs):
            try:
                print("working", flush=True)
                time.sleep(60)
            finally:
                print("cleanup", flush=True)
                time.sleep(60)

        Settings.load = classmethod(slow)
        sys.argv = ["graphrag-got", "report"]
        cli.entry()
    """)
    env = {k: v for k, v in os.environ.items() if k not in ENV.values()}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "working"
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline().strip() == "cleanup"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert err == "interrupted\n"


# --- progress rendering ----------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_format_stats_is_compact():
    assert format_stats({"llm_calls": 12, "cached": 3}) == "12 LLM calls · 3 cached"
    assert format_stats({"LLM calls": 2, "failed": 0, "skip": None}) == "2 LLM calls · 0 failed"
    assert format_stats({"rows": 12345, "rate": 2.25, "model": "qwen", "resumed": True}) == \
        "12,345 rows · 2.2 rate · model: qwen · resumed: yes"
    assert format_seconds(5.26) == "5.3s" and format_seconds(125) == "2m05s" and format_seconds(3720) == "1h02m"


def test_plain_lines_are_throttled_per_step():
    lines: list[str] = []
    clock = FakeClock()
    r = LineRenderer(lines.append, min_interval=1.0, clock=clock)
    for i in range(1, 11):  # ten events in 0.9 s: only the first is printed
        r(ProgressEvent("extract", done=i, total=20, stats={"LLM calls": i}))
        clock.now += 0.1
    assert lines == ["extract: 1/20 (5%) · 1 LLM calls"]
    r(ProgressEvent("load", done=1, total=2))  # another step is not held back by the first
    assert lines[-1] == "load: 1/2 (50%)"
    clock.now += 0.2  # 1.1 s after the first extract line
    r(ProgressEvent("extract", done=11, total=20, stats={"LLM calls": 11}))
    assert lines[-1].startswith("extract: 11/20 (55%) · ETA ") and lines[-1].endswith(" · 11 LLM calls")
    assert len(lines) == 3


def test_eta_comes_from_the_rate_since_the_first_event():
    lines: list[str] = []
    clock = FakeClock()
    r = LineRenderer(lines.append, min_interval=1.0, clock=clock)
    r(ProgressEvent("extract", done=1, total=10))
    clock.now += 2.0
    r(ProgressEvent("extract", done=3, total=10))  # 2 units in 2 s, 7 left
    assert lines[-1] == "extract: 3/10 (30%) · ETA 7.0s"


def test_last_event_is_always_printed_and_finished_once():
    lines: list[str] = []
    clock = FakeClock()
    r = LineRenderer(lines.append, min_interval=1.0, clock=clock)
    r(ProgressEvent("summaries", done=0, total=3))
    clock.now += 0.5
    r(ProgressEvent("summaries", done=2, total=3, message="community 4"))  # throttled
    clock.now += 0.5
    r(ProgressEvent("summaries", done=3, total=3, stats={"llm_calls": 3}, message="community 7"))
    r(ProgressEvent("summaries", done=3, total=3, stats={"llm_calls": 3}, message="community 7", finished=True))
    assert lines == ["summaries: 0/3 (0%)", "summaries: 3/3 (100%) · done in 1.0s · 3 LLM calls · community 7"]


def test_close_flushes_a_throttled_last_state():
    lines: list[str] = []
    clock = FakeClock()
    r = LineRenderer(lines.append, min_interval=1.0, clock=clock)
    r(ProgressEvent("load", done=1, message="documents"))
    r(ProgressEvent("load", done=5, message="relations"))  # throttled, unknown total
    assert lines == ["load: 1 · documents"]
    r.close()
    assert lines == ["load: 1 · documents", "load: 5 · relations"]
    r.close()
    assert len(lines) == 2


def test_a_step_without_count_shows_its_messages():
    lines: list[str] = []
    clock = FakeClock()
    r = LineRenderer(lines.append, clock=clock)
    r(ProgressEvent("neo4j start", message="starting"))
    clock.now += 12.5
    r(ProgressEvent("neo4j start", message="ready", finished=True))
    assert lines == ["neo4j start · starting", "neo4j start · done in 12.5s · ready"]


def test_plain_strings_pass_through():
    lines: list[str] = []
    r = LineRenderer(lines.append)
    r("  documents: 1 new")
    assert lines == ["  documents: 1 new"]


def test_progress_bar_without_a_terminal_writes_plain_lines():
    buf = io.StringIO()
    console = Console(file=buf, width=200)
    assert not console.is_terminal
    with progress_bar(console) as progress:
        progress(ProgressEvent("extract", done=1, total=2, stats={"LLM calls": 1, "cached": 0}))
        progress(ProgressEvent("extract", done=2, total=2, stats={"LLM calls": 1, "cached": 1}, finished=True))
        progress("a note")
    lines = buf.getvalue().splitlines()
    assert lines[0] == "extract: 1/2 (50%) · 1 LLM calls · 0 cached"
    assert re.fullmatch(r"extract: 2/2 \(100%\) · done in \d+\.\ds · 1 LLM calls · 1 cached", lines[1])
    assert lines[2] == "a note"
    assert "\x1b" not in buf.getvalue()


def test_progress_bar_on_a_terminal_draws_one_bar_per_step():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=150, color_system=None)
    with progress_bar(console) as progress:
        for i in range(1, 5):
            progress(ProgressEvent("extract", done=i, total=4, stats={"llm_calls": 3 * i, "cached": 1},
                                   finished=i == 4))
        progress(ProgressEvent("load", done=2, total=8, message="relations"))
        progress("plain line above the bars")
    screen = ANSI.sub("", buf.getvalue())
    assert "plain line above the bars" in screen
    extract_line = next(ln for ln in screen.splitlines()[::-1] if ln.startswith("extract"))
    load_line = next(ln for ln in screen.splitlines()[::-1] if ln.startswith("load"))
    assert "4/4" in extract_line and "12 LLM calls · 1 cached" in extract_line and "━" in extract_line
    assert "2/8" in load_line and "relations" in load_line


def test_progress_callback_protocol_is_satisfied(tmp_path):
    """What the library calls: progress(event) -> None, from any thread."""
    import threading

    lines: list[str] = []
    r = LineRenderer(lines.append, min_interval=0.0)
    threads = [threading.Thread(target=lambda k=k: [r(ProgressEvent(f"s{k}", done=i, total=50)) for i in range(1, 51)])
               for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert f"s{k}: 50/50 (100%) · done in" in "\n".join(lines)

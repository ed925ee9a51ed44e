"""Settings: sources and their precedence, empty values, errors, derived ENV map and the settings reference page."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pydantic import ValidationError

from graphrag_got.config import DEFAULT_HOME, ENV, FLAT, SECTIONS, Settings
from graphrag_got.config.docs import settings_table_markdown
from graphrag_got.common.settings_page import BEGIN, END, render, section_tables
from graphrag_got.errors import ConfigError, GraphragGotError

REPO = Path(__file__).resolve().parent.parent
SETTINGS_PAGE = REPO / "docs" / "reference" / "settings.md"


@pytest.fixture()
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No setting in the environment and a cwd without `.env` (find_dotenv looks upwards from it)."""
    for var in ENV.values():
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


# --- defaults and the ENV map ------------------------------------------------------------------

# The defaults before the move to pydantic-settings: changing one is a decision, not an accident.
OLD_DEFAULTS = {
    "home": DEFAULT_HOME, "ontology_path": Path("ontology/got.json"), "corpus_path": Path("corpus/got.txt"),
    "out_dir": Path("out"), "chunker": "auto", "chunk_min_chars": 40, "chunk_max_chars": 1500,
    # issue 28: inputs
    "follow_outside_links": False, "strict_inputs": False, "code_max_file_bytes": 2_000_000,
    "code_max_file_seconds": 20.0,
    # issue 25: a code graph loads without embeddings; the impact closure's cap
    "code_embeddings": False, "impact_max_nodes": 5000,
    "llm_provider": "auto", "ollama_base_url": "http://localhost:11434", "ollama_model": "qwen2.5:7b-instruct",
    "llamacpp_model": "qwen2.5-coder-1.5b", "models_path": None, "llamacpp_n_ctx": 4096,
    "llamacpp_threads": None, "llamacpp_adaptive_threads": True,  # threads from the cores free per call (issue 26)
    "llamacpp_loop_guard": True, "llm_max_tokens": 1536, "llm_timeout_s": 600.0, "replay_file": None, "prompts_dir": None,
    "max_entities": 12, "max_relations": 12, "concurrency": None, "evidence": True, "evidence_window": 1, "mention_threshold": 0.85,
    "relation_cues": True,
    "cue_direction": True,
    "repair": True, "resolution": True, "orphan_entities": "related", "verify": False, "neo4j_uri": "bolt://127.0.0.1:7687",
    "neo4j_username": "neo4j", "neo4j_password": "graphrag-got", "neo4j_database": "neo4j",
    "neo4j_version": "5.26.30", "batch_size": 5000, "community_resolution": 1.0, "community_seed": 42,
    "local_hops": 2, "local_max_facts": 60, "global_threshold": 5,
    # remote providers (issue 11)
    "openai_base_urls": [], "openai_model": None, "openai_api_key": None, "openai_balance": "least_busy",
    "openai_response_format": "auto", "langchain_model": None, "structured_output": "auto", "llm_retries": 3,
    "llm_backoff_s": 1.0,
    # extraction contract: answer form, mention confidence, usage (issues 10-12)
    "llm_price": "", "answer_form": "full", "min_confidence": 0.5,
    "min_fact_probability": 0.5, "classify_max_pairs": 60,
    # issue 39: "generate" before; "auto" is generate except mentions for a vault read with a small model (issue 53: terms)
    "extraction": "auto", "small_model_params": 3.0, "mentions_batch_chars": 1500,
    "terms_per_chunk": 12, "term_typing": False, "term_typing_notes": 2,
    "term_typing_batch": 40,
    # embeddings and hybrid retrieval (issue 12)
    "embeddings": True, "embeddings_provider": "embedded", "embeddings_model": None, "embeddings_batch_size": 64,
    "local_retrieval": "hybrid", "local_top_k": 8, "local_max_chunks": 8, "local_catalog_cache_s": 0.0,
    # co-occurrence, communities with levels, selective global search (issue 12)
    "cooccurrence": True, "cooccurrence_max_entities": 40, "community_algorithm": "leiden", "community_max_size": 10,
    "community_max_levels": 3, "community_incremental": True, "community_cooccurrence": False, "global_target_communities": 8,
    "global_max_communities": 6, "global_min_similarity": 0.75,
    # routing, DRIFT, the service (issue 13)
    "service_max_question_chars": 1000, "service_timeout_s": 300.0, "service_max_llm_requests": 2,
    "service_allowed_hosts": [], "service_neo4j_timeout_s": 2.0,
    # answers as cited claims for the embedded model (issue 27)
    "answer_format": "auto",
    "claim_max_sources": 3,
    "answer_language_retry": True,
    "route_classifier": False, "drift_depth": 1, "drift_followups": 3, "drift_max_calls": 6, "drift_reports": 5,
    # a hung Neo4j fails a command in seconds; a size cap per document; long runs announced (issue 37)
    "neo4j_timeout_s": 5.0, "max_document_bytes": 5_000_000, "announce_chunks": 200,
    # the embedded model served by llama-server with parallel slots; calls in flight follow the server (issue 38)
    "llamacpp_backend": "auto", "llama_server": None, "llama_server_port": 8089, "llama_server_slots": 4,
    # a local answer reads its best 20 sources, ranked by the question, excerpts one sentence each (issue 42)
    "local_context_order": "question", "local_answer_sources": 20,
    "local_answer": "auto", "extractive_sentences": 4, "extractive_connect": True, "global_map": "auto",
    "global_answer": "auto",
    # streamed calls are cut by a stall, not by their length, and resume; llama-server's spin-wait (issue 48)
    "llm_stall_timeout_s": 120.0, "llm_resume_cut_calls": True, "llama_server_poll": 50,
    "llama_server_batch": 512,
    # one writer of the graph at a time: how long a second one waits, the lock's lease (issue 48)
    "lock_wait_s": 600.0, "lock_lease_s": 60.0,
    # issue 49: recall passes
    "gleanings": 0,
    # issue 50: corrected passages per prompt and how they are picked
    "examples_per_prompt": 3, "example_selector": "similar",
}


def test_defaults_are_unchanged(clean_env: Path):
    assert Settings.load().flat() == OLD_DEFAULTS
    assert Settings().flat() == OLD_DEFAULTS


def test_env_map_is_derived_from_the_fields():
    assert set(ENV) == set(FLAT) == set(OLD_DEFAULTS)
    assert len(set(ENV.values())) == len(ENV), "two settings share an environment variable"
    assert ENV["home"] == "GRAPHRAG_HOME" and ENV["neo4j_uri"] == "NEO4J_URI"
    assert ENV["ollama_base_url"] == "OLLAMA_BASE_URL" and ENV["llm_timeout_s"] == "GRAPHRAG_LLM_TIMEOUT"
    assert ENV["models_path"] == "GRAPHRAG_MODELS_DIR"


def test_every_field_has_a_description():
    missing = [f"{section}.{name}" for section, model in SECTIONS.items() for name, info in model.model_fields.items()
               if not (info.description or "").strip()]
    assert missing == []


# --- sections: one per stage ---------------------------------------------------------------------


def test_flat_names_sections_and_variables_are_interchangeable(clean_env: Path):
    by_flat = Settings(community_algorithm="louvain", max_entities=3, neo4j_uri="bolt://h:1")
    by_section = Settings(communities={"algorithm": "louvain"}, extract={"max_entities": 3}, neo4j={"uri": "bolt://h:1"})
    by_variable = Settings(GRAPHRAG_COMMUNITY_ALGORITHM="louvain", GRAPHRAG_MAX_ENTITIES=3, NEO4J_URI="bolt://h:1")
    assert by_flat == by_section == by_variable
    assert by_flat.communities.algorithm == "louvain" and by_flat.extract.max_entities == 3
    assert by_flat.with_overrides(community_seed=7).communities.seed == 7
    assert Settings(**by_flat.flat()) == by_flat
    with pytest.raises(ValidationError):
        Settings(community_algorithmm="louvain")  # a misspelt name is refused, not ignored
    with pytest.raises(ValidationError):
        Settings(extract={"max_entitie": 3})


def test_every_setting_lives_in_exactly_one_section():
    leaves = [(section, name) for section, model in SECTIONS.items() for name in model.model_fields]
    assert len(leaves) == len(FLAT) == len(set(FLAT.values()))
    assert set(FLAT.values()) == set(leaves)


# Which sections each package reads (``settings.<section>``): a stage reads its own section, plus
# ``files``/``neo4j`` for where to read and write; the entry points (pipeline, commands, service)
# read what the stages they call need. A new read outside this map is a decision: add it here.
SECTION_READS = {
    "ingest": {"chunking"},
    "extract": {"chunking", "extract", "llm", "files", "embedding"},  # embedding: the similar-example selector
    # code: a code graph loads without embeddings; llm: the embedder (Ollama's URL); extract: the validator that
    # checks again the records a file does not vouch for
    "graph": {"graph", "neo4j", "embedding", "files", "code", "llm", "extract"},
    "communities": {"communities", "graph", "embedding", "llm", "files", "neo4j"},  # neo4j: the database it reads
    "search": {"search", "neo4j", "embedding", "llm", "files"},  # files: the ontology; chat models and embedders
    "llm": {"llm", "embedding", "files"},  # files: where the embedded llama-server keeps its pid and log
    "ontology": {"files"},
    "report": {"files", "neo4j"},  # neo4j: the graph the visualisation reads
    "code": {"neo4j", "code", "chunking"},
}


#: Section model name -> section (``Neo4jSettings`` -> ``neo4j``): a stage function takes the sections it
#: reads as parameters of these types.
SECTION_OF_MODEL = {model.__name__: name for name, model in SECTIONS.items()}


def _section_reads(package: str) -> set[str]:
    """The sections a package reads: ``settings.<section>`` in its code, and every section model it names
    (the type of a parameter or of a bundle's field)."""
    folder = Path(__file__).resolve().parents[1] / "graphrag_got" / package
    text = "\n".join(p.read_text(encoding="utf-8") for p in folder.rglob("*.py"))
    reads = set(re.findall(r"settings\.(" + "|".join(SECTIONS) + r")\b", text))
    return reads | {SECTION_OF_MODEL[m] for m in re.findall(r"\b(" + "|".join(SECTION_OF_MODEL) + r")\b", text)}


@pytest.mark.parametrize("package", sorted(SECTION_READS))
def test_each_stage_reads_only_its_sections(package: str):
    assert _section_reads(package) <= SECTION_READS[package]


#: Packages (folders) and modules (``.py``) whose functions all take the sections they read, never the
#: whole ``Settings``. The service's entry points (``create_app``, ``mcp.build_server``, ``mcp.serve_stdio``)
#: take ``Settings``, like the CLI; the runtime they build and its graph reads take the sections.
SECTION_BASED = ("llm", "communities", "extract", "graph", "search", "code", "service/runtime.py",
                 "service/graph_reads.py", "report/viz.py")


@pytest.mark.parametrize("package", SECTION_BASED)
def test_section_based_packages_take_no_whole_settings(package: str):
    where = Path(__file__).resolve().parents[1] / "graphrag_got" / package
    assert where.exists()
    takes_settings = []
    for path in ([where] if where.suffix == ".py" else sorted(where.rglob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                takes_settings += [f"{path.name}:{node.name}({a.arg})" for a in args
                                   if a.annotation is not None and "Settings" in re.findall(r"\w+", ast.unparse(a.annotation))]
    assert takes_settings == []


def test_paths_derived_from_home(clean_env: Path, tmp_path: Path):
    s = Settings(home=tmp_path / "h")
    assert s.cache_dir == tmp_path / "h" / "cache"
    assert s.models_dir == tmp_path / "h" / "models"
    assert s.with_overrides(models_path=tmp_path / "m").models_dir == tmp_path / "m"
    assert s.files.cache_dir == s.cache_dir and s.llm.models_dir(s.files.home) == s.models_dir  # what stages read


# --- sources and precedence ---------------------------------------------------------------------


def test_precedence_defaults_dotenv_environment_overrides(clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    (clean_env / ".env").write_text("GRAPHRAG_BATCH_SIZE=10\nGRAPHRAG_CONCURRENCY=3\nNEO4J_DATABASE=fromfile\n")
    monkeypatch.setenv("GRAPHRAG_CONCURRENCY", "4")
    monkeypatch.setenv("NEO4J_DATABASE", "fromenv")
    s = Settings.load(neo4j_database="fromarg", local_hops=None)
    assert s.graph.batch_size == 10  # .env over the default
    assert s.llm.concurrency == 4  # environment over .env
    assert s.neo4j.database == "fromarg"  # explicit override over everything
    assert s.search.local_hops == 2  # None means "not given": the default stays


def test_dotenv_is_found_in_a_parent_folder(clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    (clean_env / ".env").write_text("GRAPHRAG_OLLAMA_MODEL=parent-model\n")
    child = clean_env / "a" / "b"
    child.mkdir(parents=True)
    monkeypatch.chdir(child)
    assert Settings.load().llm.ollama_model == "parent-model"


def test_explicit_env_file_wins_over_the_found_one(clean_env: Path, tmp_path: Path):
    (clean_env / ".env").write_text("GRAPHRAG_OLLAMA_MODEL=found\n")
    other = tmp_path / "other.env"
    other.write_text("GRAPHRAG_OLLAMA_MODEL=explicit\n")
    assert Settings.load(env_file=other).llm.ollama_model == "explicit"


def test_missing_explicit_env_file_is_a_clear_error(clean_env: Path, tmp_path: Path):
    with pytest.raises(ConfigError, match=r"nope\.env.*does not exist"):
        Settings.load(env_file=tmp_path / "nope.env")


def test_empty_values_mean_unset(clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    (clean_env / ".env").write_text("NEO4J_PASSWORD=\nGRAPHRAG_MAX_ENTITIES=7\n")
    monkeypatch.setenv("GRAPHRAG_MAX_ENTITIES", "")
    monkeypatch.setenv("GRAPHRAG_LLAMACPP_THREADS", "")
    s = Settings.load()
    assert s.neo4j.password == "graphrag-got"
    assert s.extract.max_entities == 7  # the empty environment value does not hide the .env one
    assert s.llm.llamacpp_threads is None


def test_unrelated_dotenv_variables_are_ignored(clean_env: Path):
    (clean_env / ".env").write_text("COMPOSE_PROJECT_NAME=x\nSOMETHING_ELSE=1\nGRAPHRAG_OUT=elsewhere\n")
    assert Settings.load().files.out_dir == Path("elsewhere")


def test_variable_names_are_case_sensitive(clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("graphrag_batch_size", "3")
    assert Settings.load().graph.batch_size == 5000


def test_values_are_typed(clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GRAPHRAG_LLM_TIMEOUT", "12.5")
    monkeypatch.setenv("GRAPHRAG_REPLAY_FILE", "rec/answers.json")
    monkeypatch.setenv("GRAPHRAG_LLM_PROVIDER", "replay")
    s = Settings.load()
    assert s.llm.timeout_s == 12.5 and s.llm.replay_file == Path("rec/answers.json") and s.llm.provider == "replay"


def test_direct_construction_reads_no_environment(clean_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("GRAPHRAG_BATCH_SIZE", "7")
    monkeypatch.setenv("GRAPHRAG_MODELS_DIR", str(tmp_path / "shared-models"))
    (clean_env / ".env").write_text("GRAPHRAG_CONCURRENCY=5\n")
    s = Settings(home=tmp_path / "h")
    assert s.graph.batch_size == 5000 and s.llm.concurrency is None and s.models_dir == tmp_path / "h" / "models"
    assert Settings.load().graph.batch_size == 7


def test_home_default_follows_graphrag_home(clean_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("GRAPHRAG_HOME", str(tmp_path / "state"))
    assert Settings().files.home == tmp_path / "state"
    assert Settings.load().files.home == tmp_path / "state"
    monkeypatch.setenv("GRAPHRAG_HOME", "")
    assert Settings().files.home == DEFAULT_HOME


# --- with_overrides and errors ------------------------------------------------------------------


def test_with_overrides_returns_a_validated_copy(clean_env: Path):
    base = Settings.load()
    changed = base.with_overrides(batch_size=2, concurrency=None)
    assert changed.graph.batch_size == 2 and changed.llm.concurrency == base.llm.concurrency
    assert base.graph.batch_size == 5000
    with pytest.raises(ConfigError) as info:
        base.with_overrides(local_hops=9)
    assert "GRAPHRAG_LOCAL_HOPS = 9: Input should be less than or equal to 4" in str(info.value)


def test_bad_values_name_the_variable_and_the_value(clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    (clean_env / ".env").write_text("GRAPHRAG_CHUNKER=sentences\n")
    monkeypatch.setenv("GRAPHRAG_BATCH_SIZE", "zero")
    with pytest.raises(ConfigError) as info:
        Settings.load()
    lines = str(info.value).splitlines()
    assert lines[0] == "invalid setting(s):"
    assert any(re.fullmatch(r"  GRAPHRAG_BATCH_SIZE = 'zero': Input should be a valid integer.*", ln) for ln in lines)
    assert any(ln.startswith("  GRAPHRAG_CHUNKER = 'sentences': Input should be 'auto', 'paragraph' or 'markdown'")
               for ln in lines)
    assert "docs/reference/settings.md" in lines[-1]
    assert isinstance(info.value, GraphragGotError)


def test_unknown_override_is_refused(clean_env: Path):
    with pytest.raises(ConfigError, match="no_such_setting"):
        Settings.load(no_such_setting=1)


# --- the settings reference page ------------------------------------------------------------------


def _sections() -> dict[str, str]:
    return {name: model.__doc__ or "" for name, model in SECTIONS.items()}


def test_settings_page_is_the_generated_one():
    page = SETTINGS_PAGE.read_text(encoding="utf-8")
    assert render(page, section_tables(settings_table_markdown(), _sections())) == page, (
        "docs/reference/settings.md is out of date: run "
        "`python -m graphrag_got.config --write docs/reference/settings.md`"
    )


def test_settings_page_has_every_row_once_under_its_section():
    page = SETTINGS_PAGE.read_text(encoding="utf-8")
    table_rows = settings_table_markdown().splitlines()[2:]
    page_rows = [ln for ln in page.splitlines() if ln.startswith("| `")]
    assert sorted(page_rows) == sorted(table_rows)
    for name in SECTIONS:
        block = page.split(f"## `settings.{name}`\n", 1)[1].split("\n## ", 1)[0]
        paths = [r.rsplit("|", 2)[-2].strip() for r in block.splitlines() if r.startswith("| `")]
        assert paths and all(p.startswith(f"`{name}.") for p in paths), (name, paths)


def test_section_tables_refuse_a_row_of_no_section():
    table = settings_table_markdown() + "| `X_ODD` | `1` | odd | `nowhere.odd` |\n"
    with pytest.raises(ValueError, match="nowhere.odd"):
        section_tables(table, _sections())


def test_write_and_check_regenerate_only_the_block(tmp_path: Path):
    page = tmp_path / "settings.md"
    page.write_text(f"# Settings\n\nprose stays\n\n{BEGIN}\nstale\n{END}\n\nafter\n", encoding="utf-8")
    module = [sys.executable, "-m", "graphrag_got.config"]
    check = subprocess.run([*module, "--check", str(page)], capture_output=True, text=True, cwd=REPO, check=False)
    assert check.returncode == 1 and "out of date" in check.stderr
    write = subprocess.run([*module, "--write", str(page)], capture_output=True, text=True, cwd=REPO, check=False)
    assert write.returncode == 0 and f"wrote {page}" in write.stdout
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Settings\n\nprose stays\n") and text.endswith(f"{END}\n\nafter\n")
    assert "stale" not in text and "## `settings.extract`" in text
    assert subprocess.run([*module, "--check", str(page)], capture_output=True, cwd=REPO, check=False).returncode == 0
    page.write_text("# no markers\n", encoding="utf-8")
    refused = subprocess.run([*module, "--write", str(page)], capture_output=True, text=True, cwd=REPO, check=False)
    assert refused.returncode == 1 and "markers are missing" in refused.stderr
    assert page.read_text(encoding="utf-8") == "# no markers\n"


def test_table_lists_every_variable_with_its_default():
    table = settings_table_markdown()
    rows = table.splitlines()[2:]
    assert len(rows) == len(ENV)
    for field, var in ENV.items():
        row = next(r for r in rows if r.startswith(f"| `{var}` |"))
        default = OLD_DEFAULTS[field]
        shown = "(unset)" if default is None else f"`{default.as_posix() if isinstance(default, Path) else default}`"
        assert row.split(" | ")[1] == shown, row
    # Literal choices appear in the meaning even when the description does not list them
    chunker = next(r for r in rows if r.startswith("| `GRAPHRAG_CHUNKER` |"))
    assert all(f"`{c}`" in chunker for c in ("auto", "paragraph", "markdown"))


def test_table_cells_cannot_break_the_table():
    from pydantic import Field
    from pydantic_settings import BaseSettings

    class Odd(BaseSettings):
        mode: str = Field("a|b", validation_alias="X_MODE", description="pipe | inside")

    row = settings_table_markdown(Odd).splitlines()[2]
    assert row == "| `X_MODE` | `a\\|b` | pipe \\| inside |"


def test_module_prints_the_table():
    out = subprocess.run([sys.executable, "-m", "graphrag_got.config"], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout
    assert out == settings_table_markdown()

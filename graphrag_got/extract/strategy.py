"""Which extraction strategy runs (``GRAPHRAG_EXTRACTION``), and why: the choice the run states first.

``generate``, ``classify``, ``mentions`` and ``terms`` are taken as set. ``auto`` (the default) picks
``terms`` for a notes vault (a folder holding ``.md`` notes) read with a small model, and
``generate`` otherwise. A model is *small* when its name states at most
``GRAPHRAG_SMALL_MODEL_PARAMS`` billion parameters (``qwen2.5-coder-1.5b``, ``llama3.2:3b``), or when it
is the embedded llama.cpp model and its name states no size (a model that runs on the CPU next to
everything else). Such a model takes minutes to write a chunk's typed relations, so a vault of
thousands of notes would take weeks, and even a call per chunk for its mentions takes days; the terms
layer reads the vault at the cost of a vector index (terms found without a model, the shared ones typed
once per term), and the vault itself states most edges (links, tags, folders). Mentions and typed
relations stay one setting (or ``build --relations-for``) away.

Nothing here calls the network: the model's name is the configured one (a chat model passed in by
the caller has none, and counts as not small).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from graphrag_got.config import ChunkingSettings, ExtractSettings, LLMSettings
from graphrag_got.errors import ConfigError
from graphrag_got.ingest.chunking import ChunkedDocument, corpus_files
from graphrag_got.ingest.notes import is_note
from graphrag_got.llm.model_size import parameters_billions
from graphrag_got.extract.strategies import STRATEGIES as ALL

STRATEGIES = tuple(ALL)
WHAT = {name: s.what for name, s in ALL.items()}


@dataclass(frozen=True)
class StrategyChoice:
    """The strategy that runs and the sentence that says why."""

    strategy: str
    reason: str

    def lines(self) -> list[str]:
        return [f"extraction strategy: {self.strategy} ({WHAT[self.strategy]}); {self.reason}",
                *ALL[self.strategy].note_lines]


def configured_model(llm: LLMSettings, provider: str) -> str | None:
    """The model name the settings give for ``provider`` (None when only the server knows it)."""
    return {"llamacpp": llm.llamacpp_model, "ollama": llm.ollama_model, "openai": llm.openai_model,
            "langchain": llm.langchain_model}.get(provider)


def small_model(extract: ExtractSettings, provider: str, name: str | None) -> tuple[bool, str]:
    """Whether the model counts as small, and the words that say why."""
    limit = extract.small_model_params
    size = parameters_billions(name)
    label = f"{provider}:{Path(name).name}" if name else f"the {provider} model"
    if limit <= 0:
        return False, f"{label} (GRAPHRAG_SMALL_MODEL_PARAMS=0: no model counts as small)"
    if size is not None:
        verdict = "<=" if size <= limit else ">"
        return size <= limit, f"{label}, {size:g}B parameters {verdict} GRAPHRAG_SMALL_MODEL_PARAMS={limit:g}"
    if provider == "llamacpp":
        return True, f"{label}, the embedded CPU model (its name states no size)"
    return False, f"{label}, whose name states no size"


def is_vault(corpus: str | Path, chunking: ChunkingSettings | None = None) -> bool:
    """A folder with at least one Markdown note in it (hidden folders aside, as the corpus reader)."""
    root = Path(corpus)
    if not root.is_dir():
        return False
    follow = chunking.follow_outside_links if chunking is not None else False
    return any(is_note(doc_id) for doc_id, _ in corpus_files(root, follow_outside_links=follow))


def choose_strategy(extract: ExtractSettings, corpus: str | Path, provider: str, model: str | None, *,
                    chunking: ChunkingSettings | None = None) -> StrategyChoice:
    """The strategy for extracting ``corpus`` with ``provider``'s ``model`` (see the module docstring);
    ``chunking``: whether the corpus reader follows links out of the folder."""
    wanted = extract.strategy
    if wanted != "auto":
        return StrategyChoice(wanted, f"GRAPHRAG_EXTRACTION={wanted}")
    if not is_vault(corpus, chunking):
        return StrategyChoice("generate", "auto: the corpus is not a notes vault (a folder of .md notes)")
    small, why = small_model(extract, provider, model)
    if small:
        return StrategyChoice("terms", f"auto: a notes vault and a small model ({why})")
    return StrategyChoice("generate", f"auto: a notes vault, but not a small model ({why})")


def _inside(path: str, root: Path) -> str:
    """``path`` as a document id prefix: a path on disk under ``root`` (absolute, or from the current
    folder), else a path inside the corpus as it is written."""
    given = Path(path).expanduser()
    base = root if root.is_dir() else root.parent
    if given.exists():
        try:
            rel = given.resolve().relative_to(base.resolve()).as_posix()
            return "" if rel == "." else rel
        except ValueError:
            pass
    return path.replace("\\", "/").strip().strip("/").removeprefix("./")


def chosen_documents(paths: Sequence[str], corpus: str | Path, docs: Sequence[ChunkedDocument],
                     strategy: str) -> set[str]:
    """The documents ``--relations-for`` names: notes (``projects/plan.md``) and folders (``projects``,
    everything under it), given inside the corpus or as paths on disk under it. A path that names no
    document of the corpus is an error (a typo would otherwise ask nothing and say nothing)."""
    if not ALL[strategy].asks_typed:
        raise ConfigError(f"--relations-for adds typed relations to the mentions and terms strategies, but the {strategy} "
                          f"strategy runs (GRAPHRAG_EXTRACTION): it already asks "
                          f"{'them for every note' if ALL[strategy].carries_examples else 'its own relations'}. Drop the "
                          "flag, or set GRAPHRAG_EXTRACTION=terms (and give the vault before the flag: "
                          "build VAULT --relations-for PATH...).")
    root = Path(corpus)
    ids = [d.document.id for d in docs]
    chosen: set[str] = set()
    unknown: list[str] = []
    for path in paths:
        key = _inside(path, root)
        hits = {i for i in ids if not key or i == key or i.startswith(key + "/")}
        if not hits:
            unknown.append(path)
        chosen |= hits
    if unknown:
        raise ConfigError("--relations-for: no note of " + str(corpus) + " is at " + ", ".join(map(repr, unknown))
                          + " (give notes or folders of the vault, as paths inside it, e.g. 'projects/plan.md', "
                          "or on disk under it)")
    return chosen

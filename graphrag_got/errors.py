"""One exception root for the package; every message says what is wrong and what to do next."""

from __future__ import annotations

from collections.abc import Sequence


class GraphragGotError(Exception):
    """Root of every error this package raises on purpose. The CLI prints these without a traceback."""


class ConfigError(GraphragGotError):
    """A setting (environment, .env or argument) has a bad value."""


class PromptError(ConfigError):
    """A prompt override file (GRAPHRAG_PROMPTS_DIR) cannot be used: not named after a prompt, not
    readable, or its placeholders break the prompt's."""


class OntologyError(GraphragGotError):
    """The ontology file is missing, not JSON, or breaks a rule.

    ``problems`` holds one ``(json_path, message)`` pair per problem found, so callers can show all of
    them at once instead of stopping at the first.
    """

    def __init__(self, message: str, problems: list[tuple[str, str]] | None = None, path: str | None = None):
        self.problems = problems or []
        self.path = path
        super().__init__(message)


class CorpusError(GraphragGotError):
    """A corpus file cannot be read or chunked. ``reason`` is a short code (``not_utf8``, ``utf16``,
    ``binary``, ``front_matter``, ``unreadable``) when the error is about one file's content."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason


class LLMError(GraphragGotError):
    """The language model cannot be reached, loaded or configured."""


class LLMServerError(LLMError):
    """The embedded ``llama-server`` could not be found, started or stopped."""


class ExtractionError(GraphragGotError):
    """Extraction cannot proceed (not raised for one bad model answer: those are audited and skipped)."""


class ExtractionFileError(GraphragGotError):
    """An extraction.json file is missing or malformed."""


class Neo4jError(GraphragGotError):
    """Neo4j is unreachable, refuses the credentials, or a write failed."""


class GraphLockError(Neo4jError):
    """The graph lock (one writer at a time, :mod:`graphrag_got.graph.lock`) could not be taken or was lost."""


class GraphLockBusy(GraphLockError):
    """Another writer holds the graph lock and did not release it within the wait allowed."""


class GraphLockLost(GraphLockError):
    """The lease of our graph lock expired and another writer took it over while we were writing."""


class GraphRepairError(Neo4jError):
    """``load --repair`` rewrote what differed, yet the graph still differs from its extraction file."""


class Neo4jServerError(Neo4jError):
    """The embedded Neo4j server could not be fetched, started or stopped."""


class ModelInstallError(GraphragGotError):
    """The embedded GGUF model could not be downloaded, assembled or verified."""


class SearchError(GraphragGotError):
    """A local or global question could not be answered."""


class ModeUnavailable(SearchError):
    """A search mode asked for explicitly cannot run on the graph as it is (e.g. global without
    community reports); ``command`` is what to run to enable it. The service answers 409."""

    def __init__(self, message: str, *, mode: str, command: str):
        super().__init__(message)
        self.mode = mode
        self.command = command


def format_problems(source: str, headline: str, problems: Sequence[tuple[str, str]], advice: str, *,
                    limit: int = 10) -> str:
    """The one layout of a multi-problem error: ``<source>: <headline>:``, one indented
    ``<where>: <what>`` line per problem (at most ``limit``, then ``... and N more``), then ``advice``
    (what to do next). Every loader that collects problems before failing formats them here."""
    from graphrag_got.common.sanitize import cap_text  # errors is imported by everything: keep it light

    lines = [f"  {cap_text(where, 200)}: {cap_text(what)}" for where, what in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"  ... and {len(problems) - limit} more")
    return f"{source}: {headline}:\n" + "\n".join(lines) + f"\n{advice}"

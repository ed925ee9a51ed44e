"""Prompt templates a user can replace: one plain-text file per prompt, named placeholders checked at load.

A :class:`PromptTemplate` is a prompt's built-in text with ``${name}`` placeholders (Python's
:class:`string.Template` syntax: ``$$`` is a dollar sign), its version and the placeholders it cannot
do without. A :class:`PromptSet` holds the text in use for every template: the built-in one, or the
file ``<prompt name>.txt`` of an override folder (:func:`load_prompt_set`, the setting
``GRAPHRAG_PROMPTS_DIR``). Files are read as UTF-8, line ends as ``\\n``, one final newline dropped
(editors add one); a file that is not the name of a prompt, a ``$`` that starts no placeholder, a
placeholder the prompt does not have or a required one left out is a :class:`PromptError` naming the
file and the placeholder, for every file at once. So is a ``<name>.txt`` that is not a regular file (a
folder, a named pipe, a link to a device such as ``/dev/zero``, a link to nothing): it is named with
what it is, and never opened (opening a pipe would wait for a writer; a device never ends).

A prompt's version goes into the cache keys of the answers it produced: a custom text's version is its
template's plus the sha256 of the text (:attr:`Prompt.version`), so an edited prompt asks the model
again and an unchanged one (an exported file left as it is) keeps the built-in keys and hits the cache.
:func:`export_prompt_set` writes the templates as files to start from.

Which prompts exist is :mod:`graphrag_got.prompts`' business; nothing here knows one.
"""

from __future__ import annotations

import hashlib
import os
import stat
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from graphrag_got.common.files import write_text_atomic
from graphrag_got.errors import PromptError, format_problems

__all__ = ["SUFFIX", "Prompt", "PromptError", "PromptSet", "PromptTemplate", "export_prompt_set",
           "load_prompt_set", "readme_text"]

#: An override file is ``<prompt name>.txt``; other files of the folder (a README) are not read.
SUFFIX = ".txt"
#: Characters of an override file read at most (a prompt is a few kilobytes).
MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt's built-in text with ``${placeholders}``; ``required``: those it cannot do without;
    ``about``: one line on what it is for (the exported README)."""

    name: str
    version: str
    text: str
    required: tuple[str, ...] = ()
    about: str = ""

    def __post_init__(self) -> None:  # a programming error, caught by the first import
        problems = _placeholder_problems(self.text, self.placeholders, ())
        missing = [p for p in self.required if p not in self.placeholders]
        if problems or missing:
            raise ValueError(f"prompt template {self.name}: {problems or missing}")

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The placeholders of the built-in text (the values the code fills), in order of appearance."""
        return tuple(dict.fromkeys(string.Template(self.text).get_identifiers()))


@dataclass(frozen=True)
class Prompt:
    """The text in use for one template: the built-in one (``source`` None) or an override file's."""

    template: PromptTemplate
    text: str
    source: Path | None = None

    @property
    def custom(self) -> bool:
        return self.text != self.template.text

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def version(self) -> str:
        """The template's version, plus the text's digest when it is not the built-in text."""
        return f"{self.template.version}+sha256:{self.digest[:16]}" if self.custom else self.template.version

    def line(self) -> str:
        """What a command prints about it: ``prompt extract.system: custom sha256:ab12cd34 from DIR/...``."""
        name = f"prompt {self.template.name}"
        if self.custom:
            return f"{name}: custom sha256:{self.digest[:8]} from {self.source}"
        same = f" ({self.source} is the built-in text)" if self.source is not None else ""
        return f"{name}: built-in {self.template.version}{same}"

    def render(self, **values: object) -> str:
        return string.Template(self.text).substitute({k: str(v) for k, v in values.items()})


@dataclass(frozen=True)
class PromptSet:
    """The prompts in use: every template of ``templates`` (a live mapping: templates registered later are
    in it too), with the texts of ``overrides`` (prompt name -> text and file) in place of the built-in ones."""

    templates: Mapping[str, PromptTemplate]
    overrides: Mapping[str, tuple[str, Path]] = field(default_factory=dict)
    directory: Path | None = None

    def __getitem__(self, name: str) -> Prompt:
        template = self.templates[name]
        if name in self.overrides:
            text, source = self.overrides[name]
            return Prompt(template, text, source)
        return Prompt(template, template.text)

    def render(self, name: str, **values: object) -> str:
        """Prompt ``name`` with its placeholders filled (the code gives every one the built-in text has)."""
        return self[name].render(**values)

    def version(self, *names: str) -> str:
        """The version of prompts used together, for a cache key: their templates' versions, plus
        ``+<name>@sha256:<digest>`` for each custom one (the built-in versions alone when none is)."""
        base = "+".join(dict.fromkeys(self.templates[n].version for n in names))
        return base + "".join(f"+{n}@sha256:{self[n].digest[:16]}" for n in names if self[n].custom)

    def lines(self, names: Iterable[str]) -> list[str]:
        return [self[n].line() for n in names]


def load_prompt_set(templates: Mapping[str, PromptTemplate], directory: str | Path | None) -> PromptSet:
    """The prompts of ``directory`` (None: the built-in ones): every ``*.txt`` file must be named after a
    prompt and keep its required placeholders; a prompt without a file keeps its built-in text. Raises
    one :class:`PromptError` listing every problem. Read again only when a file changed."""
    if directory is None or str(directory) == "":
        return PromptSet(templates)
    folder = Path(directory).expanduser()
    if not folder.is_dir():
        raise PromptError(f"{folder}: the prompts folder (GRAPHRAG_PROMPTS_DIR) "
                          f"{'is not a folder' if folder.exists() else 'does not exist'}; write one with "
                          "`graphrag-got prompts export DIR`, or unset the setting to use the built-in prompts.")
    found: list[tuple[str, int, int]] = []
    odd: list[tuple[str, str]] = []  # <name>.txt entries that are no regular file: (path, what they are)
    for p in sorted(folder.iterdir()):
        if p.suffix != SUFFIX:
            continue
        info = _regular_file(p)
        if isinstance(info, str):
            odd.append((str(folder.resolve() / p.name), info))
        else:
            found.append((p.name, info.st_mtime_ns, info.st_size))
    files = tuple(found)
    key = (id(templates), tuple(templates), folder.resolve(), files, tuple(odd))
    if key not in _LOADED:
        if len(_LOADED) >= 32:
            _LOADED.clear()
        _LOADED[key] = _load(templates, folder.resolve(), files, odd)
    return _LOADED[key]


def _regular_file(path: Path) -> os.stat_result | str:
    """The status of ``path`` (links followed) when it is a regular file, else what it is instead; the
    file is not opened."""
    link = f" (a symbolic link to {os.readlink(path)})" if path.is_symlink() else ""
    try:
        info = path.stat()
    except FileNotFoundError:
        if link:
            return (f"a symbolic link to {os.readlink(path)}, which does not exist; point it at a prompt file or "
                    "delete it")
        return "vanished while the folder was read; run the command again"
    except OSError as exc:
        return f"cannot be read{link} ({exc.strerror}); make it a plain text file or delete it"
    if stat.S_ISREG(info.st_mode):
        return info
    mode = info.st_mode
    kind = ("a folder" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    return (f"{kind}{link}, not a regular file, so it was not read; a prompt file is plain UTF-8 text: "
            "replace it with one or delete it")


#: Prompt sets read, by (templates, their names, folder, its files' names, times and sizes).
_LOADED: dict[tuple[object, ...], PromptSet] = {}


def _load(templates: Mapping[str, PromptTemplate], folder: Path, files: tuple[tuple[str, int, int], ...],
          odd: list[tuple[str, str]]) -> PromptSet:
    """The prompt set of ``folder`` as it is (``files``: the override files' names, times and sizes;
    ``odd``: the ``.txt`` entries that are no regular file, each a problem)."""
    names = tuple(templates)
    problems: list[tuple[str, str]] = list(odd)
    overrides: dict[str, tuple[str, Path]] = {}
    for fname, _, size in files:
        path = folder / fname
        name = fname[: -len(SUFFIX)]
        template = templates.get(name)
        if template is None:
            problems.append((str(path), f"no prompt is named {name!r} (files are named after a prompt: "
                                        f"{', '.join(n + SUFFIX for n in names)})"))
            continue
        if size > MAX_FILE_BYTES:
            problems.append((str(path), f"{size} bytes; a prompt file holds at most {MAX_FILE_BYTES}"))
            continue
        try:
            data = _read_regular(path)
            if len(data) > MAX_FILE_BYTES:  # it grew since the folder was listed
                problems.append((str(path), f"over {MAX_FILE_BYTES} bytes; a prompt file holds at most "
                                            f"{MAX_FILE_BYTES}"))
                continue
            text = data.decode("utf-8-sig")
        except _NotRegular:
            problems.append((str(path), "no longer a regular file when it was opened, so it was not read; run the "
                                        "command again, or make it a plain UTF-8 text file"))
            continue
        except UnicodeDecodeError as exc:
            problems.append((str(path), f"not UTF-8 text ({exc.reason} at byte {exc.start})"))
            continue
        except OSError as exc:
            problems.append((str(path), f"cannot be read ({exc.strerror})"))
            continue
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        text = text[:-1] if text.endswith("\n") else text
        found = _placeholder_problems(text, template.placeholders, template.required)
        problems += [(f"{path}{where}", what) for where, what in found]
        if not found:
            overrides[name] = (text, path)
    if problems:
        raise PromptError(format_problems(str(folder), f"{len(problems)} problem(s) in the prompt files", problems,
                                          "Fix the files (`graphrag-got prompts export DIR` writes the built-in "
                                          "ones to compare with), or unset GRAPHRAG_PROMPTS_DIR."))
    return PromptSet(templates, overrides, folder)


class _NotRegular(Exception):
    """The file became something else than a regular file after the folder was listed."""


def _read_regular(path: Path) -> bytes:
    """The bytes of ``path`` (at most MAX_FILE_BYTES + 1), when it is a regular file once opened. Opened
    non-blocking: a named pipe put in its place since the listing is not waited on, and is not read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotRegular(path)
        return fh.read(MAX_FILE_BYTES + 1)


def _placeholder_problems(text: str, known: tuple[str, ...], required: tuple[str, ...]) -> list[tuple[str, str]]:
    """(``:line:column`` or "", problem) for each bad ``$``, unknown placeholder and missing required one."""
    problems: list[tuple[str, str]] = []
    shown = ", ".join(f"${{{k}}}" for k in known) or "none"
    pattern = string.Template.pattern
    for m in pattern.finditer(text):
        if m.group("invalid") is not None:
            line = text.count("\n", 0, m.start()) + 1
            column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            problems.append((f":{line}:{column}", "a '$' that starts no placeholder (write '$$' for a dollar sign, "
                                                  "${name} for a placeholder)"))
            continue
        name = m.group("named") or m.group("braced")
        if name is not None and name not in known:
            line = text.count("\n", 0, m.start()) + 1
            problems.append((f":{line}", f"unknown placeholder ${{{name}}} (this prompt has: {shown})"))
    if not problems:
        present = set(string.Template(text).get_identifiers())
        problems += [("", f"the required placeholder ${{{name}}} is missing (this prompt has: {shown})")
                     for name in required if name not in present]
    return problems


def export_prompt_set(prompts: PromptSet, directory: str | Path, *, force: bool = False,
                      readme: str = "") -> list[Path]:
    """Write every prompt of ``prompts`` as ``<name>.txt`` into ``directory`` (created), and ``README.md``
    (``readme``) beside them. Refuses, writing nothing, when one of the files exists, unless ``force``."""
    folder = Path(directory).expanduser()
    targets = {name: folder / f"{name}{SUFFIX}" for name in prompts.templates}
    existing = [p for p in [*targets.values(), folder / "README.md"] if p.exists()]
    if existing and not force:
        raise PromptError(format_problems(str(folder), f"{len(existing)} file(s) would be overwritten",
                                          [(str(p), "exists") for p in existing],
                                          "Pass --force to overwrite them, or export into another folder."))
    if folder.exists() and not folder.is_dir():
        raise PromptError(f"{folder}: not a folder; export the prompts into a folder.")
    written = []
    for name, path in targets.items():
        write_text_atomic(path, prompts[name].text + "\n")
        written.append(path)
    if readme:
        write_text_atomic(folder / "README.md", readme)
        written.append(folder / "README.md")
    return written


def readme_text(prompts: PromptSet) -> str:
    """The README.md an export writes beside the prompt files: the format, and each prompt's placeholders."""
    lines = ["# Prompt files", "",
             "One file per prompt, `<prompt name>.txt`, read as UTF-8 plain text (one final newline is not part "
             "of the prompt). Point `GRAPHRAG_PROMPTS_DIR` at this folder to use them. Placeholders are written "
             "`${name}`; write `$$` for a dollar sign. A file may leave out a placeholder unless it is marked "
             "required, and may not use one its prompt does not have. A prompt without a file keeps its built-in "
             "text: delete the files you do not change, so that they follow the built-in prompts as those improve.",
             "", "A changed prompt is part of the cache keys of the answers it gets: the model is asked again; an "
             "unchanged file keeps the built-in keys.", "",
             "| file | version | placeholders (* required) | what it is |", "| --- | --- | --- | --- |"]
    for name, template in prompts.templates.items():
        marks = " ".join(f"`${{{p}}}`" + ("*" if p in template.required else "") for p in template.placeholders)
        about = template.about.replace("|", "/")
        lines.append(f"| `{name}{SUFFIX}` | {template.version} | {marks or 'none'} | {about} |")
    return "\n".join(lines) + "\n"

"""The settings reference: one Markdown table row per setting, generated from the model
(``python -m graphrag_got.config --write docs/reference/settings.md``)."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from graphrag_got.config import Settings, _leaves, env_map



def _shown_default(info: FieldInfo) -> str:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    value = extra["shown_default"] if "shown_default" in extra else info.get_default(call_default_factory=False)
    if value is None:
        return "(unset)"
    if isinstance(value, Path):
        value = value.as_posix()
    return f"`{value}`"


def _choices(info: FieldInfo) -> list[str]:
    """The allowed values of a ``Literal`` field, in order (empty for other types)."""
    if typing.get_origin(info.annotation) is Literal:
        return [str(v) for v in typing.get_args(info.annotation)]
    return []


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_table_markdown(model: type[BaseModel] = Settings) -> str:
    """The Markdown table of every setting (variable, default, meaning, and for ``Settings`` where it
    lives in Python), as README.md shows it."""
    sectioned = model is Settings
    rows = ["| variable | default | meaning | in Python |", "|---|---|---|---|"] if sectioned else \
        ["| variable | default | meaning |", "|---|---|---|"]
    variables = env_map(model)
    for name, path, info in _leaves(model):
        if not info.description:
            raise TypeError(f"{model.__name__}.{name} needs a description (it is the README's 'meaning' column)")
        meaning = info.description
        choices = _choices(info)
        if choices and not all(f"`{c}`" in meaning for c in choices):
            meaning += " (one of: " + ", ".join(f"`{c}`" for c in choices) + ")"
        row = f"| `{variables[name]}` | {_cell(_shown_default(info))} | {_cell(meaning)} |"
        rows.append(row + (f" `{path}` |" if sectioned else ""))
    return "\n".join(rows) + "\n"

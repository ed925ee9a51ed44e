"""What every settings section is made of: a field read from one environment variable (``_env``) and the
section base class. Apart from ``graphrag_got.config`` so the sections can live in more than one module."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def _env(var: str, default: Any, description: str, *, flat: str | None = None, **constraints: Any) -> Any:
    """A field read from environment variable ``var``; ``flat`` is its flat name when that is not the
    field name (``community_algorithm`` for ``CommunitySettings.algorithm``)."""
    extra = {"flat": flat} if flat else None
    return Field(default, validation_alias=var, description=description, json_schema_extra=extra, **constraints)


class Section(BaseModel):
    """One stage's settings: fields by name in code, by environment variable in `.env`."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)

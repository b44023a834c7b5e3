"""The base of every camelCase file format (eval trees, web results, site state)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class CamelModel(BaseModel):
    """A strict model whose JSON keys are camelCase; Python code may use either name."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

"""The capability table: how `{app:<capability>}` is found on a phone (data in capabilities.yaml)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from farm.errors import FarmError
from farm.yaml_strict import strict_load

CAPABILITIES_FILE = Path(__file__).with_name("capabilities.yaml")


class Capability(BaseModel):
    """One capability and the standard intent that resolves it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Name used in `{app:<name>}` and `app:<name>`."""
    action: str | None = None
    """Intent action (`android.intent.action.SET_ALARM`); None: no standard intent."""
    category: str | None = None
    """Intent category (`android.intent.category.APP_CALCULATOR`), or None."""
    required_on_every_phone: bool = False
    """Every phone should have it: tasks using it must list `app:<name>` in `requires`."""
    aliases: tuple[str, ...] = ()
    """Other names accepted for the same capability (`alarm` for `clock`)."""
    description: str = ""
    """What the app is, for people."""

    @property
    def standard(self) -> bool:
        """Whether a standard intent resolves it (False: use the app the agent opened)."""
        return self.action is not None


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: str | None = None
    category: str | None = None
    required_on_every_phone: bool = False
    aliases: list[str] = Field(default_factory=list)
    description: str = ""


def parse_capabilities(path: Path) -> dict[str, Capability]:
    """Read a capability table; aliases map to the same Capability. FarmError when invalid."""
    try:
        raw = strict_load(path.read_text(encoding="utf-8"), path)
    except (OSError, yaml.YAMLError) as exc:
        raise FarmError(f"{path}: cannot read capability table: {exc}") from exc
    if not isinstance(raw, dict):
        raise FarmError(f"{path}: capability table must be a mapping of name → entry")
    table: dict[str, Capability] = {}
    for name, body in raw.items():
        try:
            entry = _Entry.model_validate(body)
            cap = Capability(name=str(name), **entry.model_dump(exclude={"aliases"}), aliases=tuple(entry.aliases))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise FarmError(f"{path}: {name}.{where}: {first['msg']}") from exc
        for key in (cap.name, *cap.aliases):
            if key in table:
                raise FarmError(f"{path}: capability name {key!r} defined twice")
            table[key] = cap
    return table


@lru_cache(maxsize=1)
def _shipped() -> dict[str, Capability]:
    return parse_capabilities(CAPABILITIES_FILE)


def load_capabilities() -> dict[str, Capability]:
    """The shipped capability table, keyed by name and alias (a fresh dict; entries are frozen)."""
    return dict(_shipped())

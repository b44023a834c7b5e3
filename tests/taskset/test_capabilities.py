"""The capability table (data) and its loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.taskset.capabilities import load_capabilities, parse_capabilities


def test_standard_intents() -> None:
    caps = load_capabilities()
    assert caps["alarm"] is caps["clock"]
    assert (caps["clock"].action, caps["clock"].category) == ("android.intent.action.SET_ALARM", None)
    for name in ("calendar", "calculator", "contacts", "browser", "email", "gallery", "maps", "messaging", "music"):
        assert caps[name].action == "android.intent.action.MAIN"
        assert caps[name].category == f"android.intent.category.APP_{name.upper()}"
    assert caps["settings"].action == "android.settings.SETTINGS"


def test_capabilities_without_standard_intent() -> None:
    caps = load_capabilities()
    assert not caps["notes"].standard and not caps["weather"].standard
    assert caps["calculator"].standard


def test_phone_guaranteed_capabilities() -> None:
    caps = load_capabilities()
    required = {c.name for c in caps.values() if c.required_on_every_phone}
    assert required == {"clock", "calendar", "calculator", "contacts", "settings"}


def test_unknown_key_in_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "caps.yaml"
    path.write_text("notes: {action: null, intent: x}\n", encoding="utf-8")
    with pytest.raises(FarmError, match="notes.intent"):
        parse_capabilities(path)


def test_alias_defined_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "caps.yaml"
    path.write_text("clock: {aliases: [alarm]}\nalarm: {}\n", encoding="utf-8")
    with pytest.raises(FarmError, match="'alarm' defined twice"):
        parse_capabilities(path)

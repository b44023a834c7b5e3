"""A key given twice in a YAML mapping is refused, in every YAML file the farm reads, with file:line and the key.

PyYAML alone keeps the last of two equal keys without a word: `{port: 16101, port: 16102}` read as 16102.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from farm.config import load_config
from farm.errors import FarmError
from farm.scoring.overrides import load_overrides_yaml
from farm.sim.profile import DEFAULT_PROFILE_PATH, load_profile
from farm.taskset.capabilities import CAPABILITIES_FILE, parse_capabilities
from farm.taskset.probes import load_probe
from farm.yaml_strict import DuplicateKeyError, strict_load
from tests.helpers.cli import error_line, farm

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("text", "line", "key", "first"), [
    ("port: 16101\nport: 16102\n", 2, "'port'", 1),
    ("{port: 16101, port: 16102}\n", 1, "'port'", 1),
    ("adb_servers:\n  - host: h\n    port: 1\n    port: 2\n", 4, "'port'", 3),
    ("a:\n  b:\n    c: 1\n    d: 2\n    c: 3\n", 5, "'c'", 3),
    # Equal after YAML reads them: the dict would keep one of the two.
    ("yes: 1\ntrue: 2\n", 2, "True", 1),
    ("1: a\n1.0: b\n", 2, "1.0", 1),
    ("'x': 1\n\"x\": 2\n", 2, "'x'", 1),
    ("s: !!set {a, a}\n", 1, "'a'", 1),
])
def test_a_key_given_twice_is_refused_with_the_line_and_the_key(text: str, line: int, key: str, first: int) -> None:
    assert isinstance(yaml.safe_load(text), dict)  # what the farm used to accept silently
    with pytest.raises(DuplicateKeyError) as err:
        strict_load(text, "farm.yaml")
    assert err.value.line() == (f"farm.yaml:{line}: duplicate key {key} (first at line {first})"
                                f" — keep one {key}: YAML would silently keep only the last")
    assert isinstance(err.value, FarmError) and err.value.exit_code == 2


@pytest.mark.parametrize("text", [
    "a: 1\nb: 2\n",
    "a: {x: 1}\nb: {x: 1}\n",  # the same key in two mappings
    "- {port: 1}\n- {port: 1}\n",
    "1: a\n'1': b\n",  # an int and a string: two keys
    "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n",  # overriding a merged key is what merging is for
    "a: &a {x: 1}\nb: &b {x: 2}\nc:\n  <<: [*a, *b]\n",
    "",
    "just text\n",
])
def test_everything_else_reads_as_safe_load_reads_it(text: str) -> None:
    assert strict_load(text, "f.yaml") == yaml.safe_load(text)


def test_bad_syntax_is_still_a_yaml_error_for_the_caller_to_word() -> None:
    with pytest.raises(yaml.YAMLError):
        strict_load("a: [1\n", "f.yaml")
    with pytest.raises(yaml.YAMLError):
        strict_load("? [a]\n: 1\n", "f.yaml")  # an unhashable key, refused as before
    with pytest.raises(yaml.YAMLError):
        strict_load("a: !!python/object:os.system x\n", "f.yaml")  # still safe


def test_a_huge_key_is_cut_in_the_message() -> None:
    key = "k" * 100_000  # a simple key is at most 1024 characters: `?` gives a longer one
    with pytest.raises(DuplicateKeyError) as err:
        strict_load(f"? {key}\n: 1\n? {key}\n: 2\n", "f.yaml")
    assert len(err.value.line()) < 400


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


READERS: dict[str, tuple[str, str, Callable[[Path], Any]]] = {
    "farm.yaml": ("farm.yaml", "adb_servers:\n  - host: 127.0.0.1\n    port: 16101\n    port: 16102\n", load_config),
    "overrides": ("overrides.yaml", "- id: t1\n  from: fail\n  to: pass\n  to: fail\n  evidence: x\n",
                  load_overrides_yaml),
    "probe": ("sdk_int.yaml", "name: sdk_int\ndescription: x\nname: sdk_int\nargv: [getprop]\n", load_probe),
    "capabilities": ("capabilities.yaml", "dialer:\n  packages: [a]\ndialer:\n  packages: [b]\n", parse_capabilities),
    "sim profile": ("phone.yaml", "model: A\nmodel: B\n", load_profile),
}
"""Every reader of a YAML file: the file name, a text with a key twice (the second on line 4 or 3), the reader."""


@pytest.mark.parametrize("reader", READERS)
def test_every_yaml_reader_refuses_a_key_given_twice(reader: str, tmp_path: Path) -> None:
    name, text, read = READERS[reader]
    path = _write(tmp_path, name, text)
    with pytest.raises(DuplicateKeyError) as err:
        read(path)
    assert err.value.source == str(path)
    assert err.value.line().startswith(f"{path}:{err.value.line_number}: duplicate key ")
    assert text.splitlines()[err.value.line_number - 1].lstrip(" -").startswith(f"{err.value.key}:")


def test_farm_refuses_a_farm_yaml_with_a_port_twice(tmp_path: Path) -> None:
    _write(tmp_path, "farm.yaml", "adb_servers:\n  - host: 127.0.0.1\n    port: 16101\n    port: 16102\n")
    line = error_line(farm(tmp_path, "config", "show"))
    assert line == ("error: farm.yaml:4: duplicate key 'port' (first at line 3)"
                    " — keep one 'port': YAML would silently keep only the last")


def _shipped_yaml() -> list[Path]:
    found = [ROOT / "farm.example.yaml", CAPABILITIES_FILE, DEFAULT_PROFILE_PATH]
    for folder in ("probes", "fixtures", "farm", "tasks", "web_bench", "host_agent"):
        found += sorted((ROOT / folder).rglob("*.yaml")) + sorted((ROOT / folder).rglob("*.yml"))
    return sorted(set(found))


@pytest.mark.parametrize("path", _shipped_yaml(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_shipped_yaml_file_holds_a_key_twice(path: Path) -> None:
    strict_load(path.read_text(encoding="utf-8"), path)

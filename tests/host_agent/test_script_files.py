"""Script files are YAML read strictly: a key given twice is refused, naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import FarmError
from host_agent.scripted import load_scripts


def test_a_script_with_a_key_given_twice_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "t1.yaml").write_text("steps:\n  - launch: {package: a}\nsteps:\n  - answer: {text: x}\n",
                                      encoding="utf-8")
    with pytest.raises(FarmError) as caught:
        load_scripts(tmp_path)
    assert f"{tmp_path / 't1.yaml'}:3: duplicate key 'steps'" in caught.value.line()


def test_the_shipped_scripts_load() -> None:
    assert len(load_scripts()) >= 5

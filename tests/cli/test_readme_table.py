"""The README's CLI table ("A short tour of the CLI") names only commands and flags that exist.

Every backticked `farm …` command of the table is walked down typer's click command tree; each flag
it uses (and each backticked `--flag` beside it in the same cell) must be an option of that command
that `--help` shows (an old spelling kept as a hidden alias does not count).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer._click as click

from farm.cli import command_tree

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## A short tour of the CLI"


def table_cells() -> list[str]:
    """The command cell of each row of the first table of the section."""
    text = README.read_text(encoding="utf-8")
    rows: list[str] = []
    for line in text.split(SECTION, 1)[1].splitlines()[1:]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    cells = [row.strip("|").rsplit(" | ", 1)[-1] for row in rows[2:]]  # after the header and its rule
    assert len(cells) >= 15, cells
    return cells


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command `farm words…` names, and the words left after its name."""
    command: click.Command = command_tree(plain_help=True)
    rest = list(words)
    while rest and rest[0] in getattr(command, "commands", {}):
        command = command.commands[rest.pop(0)]  # type: ignore[attr-defined]
    return command, rest


def shown_flags(command: click.Command) -> set[str]:
    """The flags `--help` lists for a command (hidden options and their names left out)."""
    flags = {"-h", "--help"}
    for param in command.params:
        if param.param_type_name == "option" and not getattr(param, "hidden", False):
            flags.update(param.opts)
            flags.update(param.secondary_opts)
    return flags


def commands_of(cell: str) -> list[tuple[list[str], list[str]]]:
    """(the `farm …` words, backticked `--flag` words beside it) for each command of a cell."""
    spans = re.findall(r"`([^`]+)`", cell)
    found: list[tuple[list[str], list[str]]] = []
    for span in spans:
        words = shlex.split(span)
        if words[0] == "farm":
            found.append((words[1:], []))
        elif words[0].startswith("-") and found:
            found[-1][1].extend(words)
    return found


def problems(cell: str) -> list[str]:
    """What in a cell names no command, or a flag its command does not show."""
    commands = commands_of(cell)
    if not commands:
        return [f"no `farm …` command in {cell!r}"]
    found: list[str] = []
    for words, extra in commands:
        command, rest = resolve(words)
        if getattr(command, "commands", None):
            found.append(f"farm {' '.join(words)}: names a group, not a command")
            continue
        flags = shown_flags(command)
        used = [w.split("=", 1)[0] for w in [*rest, *extra] if w.startswith("-")]
        found += [f"farm {' '.join(words)}: {f} is not a flag of it" for f in used if f not in flags]
    return found


CELLS = table_cells()


@pytest.mark.parametrize("cell", CELLS, ids=[c[:50] for c in CELLS])
def test_every_command_and_flag_of_the_readme_table_exists(cell: str) -> None:
    assert problems(cell) == []


@pytest.mark.parametrize(("cell", "problem"), [
    ("`farm run --nosuch`", "--nosuch is not a flag"),
    ("`farm nosuch --split tune`", "names a group"),
    ("`farm web`", "names a group"),
    ("`farm run --run-id X`", "--run-id is not a flag"),  # an old spelling, hidden from help
    ("`farm web run --serial S`", "--serial is not a flag"),
    ("`farm run`, `--bogus`", "--bogus is not a flag"),
    ("`record`, `verify`", "no `farm …` command"),
])
def test_the_check_catches_what_does_not_exist(cell: str, problem: str) -> None:
    assert any(problem in p for p in problems(cell)), problems(cell)

"""Help says what each value is (`--device SERIAL`, not `<list[str]>`), stays whole when piped, and shows one
name per concept (old spellings keep working, unlisted)."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer._click as click

from farm.cli import command_tree
from tests.helpers.cli import error_line, farm, farm_on_terminal
from tests.helpers.records import write_tasks

OTHER_OWNERS = {("desktop", "report")}
"""Commands whose declarations live elsewhere and are not held to the metavar rule here."""


def commands(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from commands(sub, (*path, name))


def help_text(*path: str) -> str:
    """`farm path… --help` as a pipe gets it (plain help), in this process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        command_tree(plain_help=True).main(args=[*path, "--help"], prog_name="farm", standalone_mode=False)
    return out.getvalue()


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


ALL = [path for path, _c in commands(command_tree(plain_help=True))]


@pytest.mark.parametrize(("path", "shown"), [
    (("run",), ["--device SERIAL", "--run RUN", "--tasks-dir DIR", "--runs-dir DIR", "--set NAME", "-k EXPR",
                "--exclude ID_OR_GLOB", "--only-failed-from RUN", "--resume RUN", "--config FILE"]),
    (("sweep",), ["--device SERIAL", "--run RUN", "--tasks-dir DIR", "--set NAME", "--retry-from RUN"]),
    (("pull",), ["--device SERIAL", "--run RUN", "--runs-dir DIR"]),
    (("report",), ["--out DIR", "--runs-dir DIR", "--json"]),
    (("query",), ["--run RUN", "--format table|csv|json", "--json"]),
    (("history",), ["--out DIR", "--runs-dir DIR"]),
    (("tasks", "list"), ["--tasks-dir DIR", "--set NAME", "-k EXPR", "--json"]),
    (("tasks", "show"), ["--tasks-dir DIR"]),
    (("devices",), ["--json", "--config FILE"]),
    (("web", "run"), ["--device SERIAL", "--run RUN", "--out FILE", "--runs-dir DIR"]),
    (("web", "probe"), ["--device SERIAL"]),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_help_names_what_each_value_is(path: tuple[str, ...], shown: list[str]) -> None:
    text = help_text(*path)
    for flag in shown:
        assert re.search(rf"^\s+(-\w, )?{re.escape(flag)}(\s|$)", text, re.MULTILINE), (flag, text)


@pytest.mark.parametrize("path", [p for p in ALL if p not in OTHER_OWNERS], ids=" ".join)
def test_no_help_shows_a_python_type(path: tuple[str, ...]) -> None:
    text = help_text(*path)
    assert not re.search(r"<(str|int|float|path|bool|list\[\w+\])( range)?>|\bTEXT\b|\bPATH\b", text), text


@pytest.mark.parametrize(("path", "old"), [
    (("run",), ["--run-id", "--all"]), (("sweep",), ["--run-id"]), (("web", "run"), ["--run-id", "--serial",
                                                                                      "--output"]),
    (("web", "probe"), ["--serial"]), (("tasks", "list"), ["--dir"]), (("tasks", "show"), ["--dir"]),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_old_spellings_are_not_listed(path: tuple[str, ...], old: list[str]) -> None:
    listed = re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", help_text(*path), re.MULTILINE)
    assert listed and not set(old) & set(listed)


def test_old_spellings_still_work_and_messages_name_the_one_typed(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    old = farm(tmp_path, "tasks", "list", "--dir", "t")
    assert old.returncode == 0 and old.stdout == farm(tmp_path, "tasks", "list", "--tasks-dir", "t").stdout
    assert "--run-id '../x': not a safe name" in error_line(farm(tmp_path, "run", "--run-id", "../x"))
    assert "--run '../x': not a safe name" in error_line(farm(tmp_path, "run", "--run", "../x"))
    both = error_line(farm(tmp_path, "sweep", "--run", "a", "--run-id", "b"))
    assert "--run and --run-id both given" in both
    assert "--tasks-dir and --dir both given" in error_line(
        farm(tmp_path, "tasks", "list", "--tasks-dir", "t", "--dir", "u"))


def test_piped_help_lists_every_command_and_option_whole(tmp_path: Path) -> None:
    proc = farm(tmp_path, "--help", COLUMNS="40")
    assert proc.returncode == 0
    # Wrapped to the width (also at hyphens), never cut: compared without whitespace.
    flat = squeeze(proc.stdout)
    root = command_tree(plain_help=True)
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        first = (command.short_help or "").strip()
        assert first and squeeze(f"{name} {first}") in flat, (name, first)
    assert "..." not in flat.replace("[ARGS]...", "") and "…" not in flat and "╭" not in proc.stdout
    run = squeeze(farm(tmp_path, "run", "--help", COLUMNS="40").stdout)
    for param in root.commands["run"].params:  # type: ignore[attr-defined]
        if param.param_type_name == "option" and not getattr(param, "hidden", False):
            assert squeeze(param.help or "") in run, param.opts


def test_help_at_a_terminal_is_drawn_and_the_same_flags(tmp_path: Path) -> None:
    code, drawn, _out, _err = farm_on_terminal(tmp_path, "tasks", "list", "--help", columns=120)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", drawn)
    assert code == 0 and "╭" in shown
    for flag in ("--tasks-dir", "--set", "--exclude", "--only-failed-from", "--json"):
        assert flag in shown
    assert "--dir " not in shown

"""Proof that a refused command wrote nothing: every file and folder under a root, before and after."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.desktop import FarmRun


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` with its bytes (None for a folder or anything that is not a regular file)."""
    return {
        str(path.relative_to(root)): path.read_bytes() if path.is_file() and not path.is_symlink() else None
        for path in sorted(root.rglob("*"))
    }


def assert_refused(outcome: FarmRun, *names: str | Path) -> str:
    """Exit 2 with exactly one `error:` line on stderr that names every one of `names`; returns that line."""
    assert outcome.code == 2, (outcome.code, outcome.stdout, outcome.stderr)
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1, outcome.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in outcome.stderr
    for name in names:
        assert str(name) in lines[0], (name, lines[0])
    return lines[0]

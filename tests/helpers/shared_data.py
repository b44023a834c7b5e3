"""Third-party test data (real device captures, dumps) kept beside the project, never inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
"""`../shared/data` next to the repository root; CI provides it."""


def shared_data(*parts: str) -> Path:
    """The path `../shared/data/<parts…>`; skips the calling test when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: third-party data is not committed to the project (CI provides ../shared)")
    return path

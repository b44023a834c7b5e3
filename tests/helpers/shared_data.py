"""Third-party test data (real device captures, dumps) kept beside the project, never inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
"""`../shared/data` next to the repository root; CI provides it."""


def shared_data(*parts: str) -> Path:
    """The path `../shared/data/<parts…>`. Skips the calling test only when `../shared/data` itself is absent;
    with it present, a missing file fails the test, so a renamed or mistyped file cannot pass as a skip."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent: third-party data is not committed to the project (CI provides it)")
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} is missing from ../shared/data: a test names a file the shared data does not have")
    return path

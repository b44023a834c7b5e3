"""Third-party test data (real device captures, dumps) kept beside the project, never inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
"""`../shared/data` next to the repository root; CI provides it."""


def shared_data(*parts: str) -> Path:
    """The path `../shared/data/<parts…>`. Fails the calling test when `../shared/data` is absent or lacks the
    file: a test that cannot read its data proves nothing, so it never passes as a skip."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"{SHARED_DATA} is absent: third-party data is not committed to the project; place the shared"
                    " data beside the repository (CI provides it)")
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} is missing from ../shared/data: a test names a file the shared data does not have")
    return path

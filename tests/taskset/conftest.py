"""Fixtures of the task-set tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.taskset import TaskSetBuilder


@pytest.fixture
def taskset(tmp_path: Path) -> TaskSetBuilder:
    """A minimal valid task set in a temp dir."""
    return TaskSetBuilder(tmp_path / "tasks")

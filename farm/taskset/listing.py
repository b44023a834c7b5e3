"""What `farm tasks list --json` prints: the selected tasks, one object each."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from farm.taskset.loader import LoadedTask
from farm.taskset.model import Category, Expect, Partition


class TaskRow(BaseModel):
    """One task of the listing."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Task id (the file name)."""
    directory: str
    """Directory relative to the task-set root (`read/system`)."""
    category: Category
    """The task's category."""
    partition: Partition | None
    """tune or holdout; null when the file names none."""
    expect: Expect
    """What a correct run ends in."""
    requires: list[str]
    """Requirements a phone must meet (else the task is skipped there)."""
    path: str
    """The task file."""


class TaskListing(BaseModel):
    """`farm tasks list --json`."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[TaskRow]
    """The selected tasks, in task-set order."""


def task_listing(tasks: Sequence[LoadedTask]) -> TaskListing:
    """The listing of `tasks`."""
    return TaskListing(tasks=[
        TaskRow(id=lt.task.id, directory=lt.directory, category=lt.task.category, partition=lt.task.partition,
                expect=lt.task.expect, requires=list(lt.task.requires), path=str(lt.path))
        for lt in tasks
    ])

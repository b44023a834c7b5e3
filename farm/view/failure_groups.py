"""The run page's failures grouped: the latest tries that failed or ended in an infrastructure error, grouped by
the type of their first check that did not pass, by their end reason or by their task's category (`group`, one
of `farm.view.unit_query.GROUPINGS`), a group per verdict and value.

Each group is one collapsible block on the page (`<details>`, closed: it opens without any script) with its count,
its first GROUP_UNITS units as links to their pages and a link to the units table filtered to exactly the group
(`verdict` with `check`, `end` or `category`; `-` for none). Counted in SQL from the run's `units` table
(`farm.view.unit_index`); the largest MAX_GROUPS groups are shown and the page says what it leaves out.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from farm.view.unit_index import UnitIndex
from farm.view.unit_query import GROUPINGS, NONE, UnitQuery

MAX_GROUPS = 30
"""Groups shown at most (the largest)."""
GROUP_UNITS = 10
"""Units listed in a group (its first in the table's order); the rest are one filter away."""

_VALUE = {"check": "coalesce(nullif(check_type, ''), '-')", "end": "coalesce(nullif(end_reason, ''), '-')",
          "category": "coalesce(nullif(category, ''), '-')"}
"""Each grouping's value in SQL (NONE when the unit has none)."""
_NAMES = {"check": ("failing check", "no failing check"), "end": ("end reason", "no end reason"),
          "category": ("category", "no category")}
_FAILED = "latest AND verdict IN ('fail', 'error')"


class GroupUnit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    task_id: str
    instance: str
    repeat: int
    phone: str
    why: str
    """The failing check's detail, else the record's first reason (empty when neither)."""


class FailureGroup(BaseModel):
    """The failures (or errors) that share one value."""

    model_config = ConfigDict(extra="forbid")

    verdict: str
    """fail or error."""
    value: str
    """The check type, end reason or category; NONE when the units have none."""
    count: int
    units: list[GroupUnit] = Field(default_factory=list)
    """The first GROUP_UNITS of them, in the table's order."""
    query: UnitQuery
    """The units table filtered to exactly this group."""

    @property
    def none(self) -> bool:
        return self.value == NONE


class FailureGroups(BaseModel):
    """The run's failures grouped one way."""

    model_config = ConfigDict(extra="forbid")

    by: str
    """One of GROUPINGS."""
    name: str
    """What the value is, in words (`failing check`)."""
    none_name: str
    """A group of units without a value, in words (`no failing check`)."""
    groups: list[FailureGroup] = Field(default_factory=list)
    units: int = 0
    """Failed and errored latest tries, every group."""
    more_groups: int = 0
    """Groups not shown (beyond MAX_GROUPS)."""
    more_units: int = 0
    """Units in the groups not shown."""


def failure_groups(index: UnitIndex, query: UnitQuery) -> FailureGroups:
    """The failures of the run grouped by `query.group` (links keep the grid page and the grouping of `query`)."""
    by = query.group if query.group in GROUPINGS else GROUPINGS[0]
    value = _VALUE[by]
    out = FailureGroups(by=by, name=_NAMES[by][0], none_name=_NAMES[by][1])
    counted = index.select(f"SELECT verdict, {value} AS g, count(*) AS n FROM units WHERE {_FAILED}"
                           " GROUP BY ALL ORDER BY n DESC, verdict, g", [])
    out.units = sum(int(r[2]) for r in counted)
    shown = counted[:MAX_GROUPS]
    out.more_groups, out.more_units = len(counted) - len(shown), sum(int(r[2]) for r in counted[MAX_GROUPS:])
    view: dict[str, object] = {"gpage": query.gpage, "group": by}
    groups: dict[tuple[str, str], FailureGroup] = {}
    for verdict, g, n in shown:
        # The filter's `check`, `end` or `category` is the value itself, or NONE for units without one.
        table = UnitQuery.model_validate({"verdict": str(verdict), by: str(g), **view})
        groups[(str(verdict), str(g))] = FailureGroup(verdict=str(verdict), value=str(g), count=int(n), query=table)
    if groups:
        keys = [f"{v}\x00{g}" for v, g in groups]
        for verdict, g, key, task, instance, repeat, phone, why in index.select(
                f"SELECT verdict, g, key, task_id, instance, repeat, phone, w FROM ("
                f" SELECT *, {value} AS g, coalesce(check_detail, reason, '') AS w,"
                f"  row_number() OVER (PARTITION BY verdict, {value} ORDER BY ord) AS nth"
                f" FROM units WHERE {_FAILED})"
                " WHERE nth <= ? AND list_contains(?, verdict || chr(0) || g) ORDER BY verdict, g, nth",
                [GROUP_UNITS, keys]):
            groups[(str(verdict), str(g))].units.append(GroupUnit(
                key=str(key), task_id=str(task), instance=str(instance), repeat=int(repeat), phone=str(phone),
                why=str(why)))
    out.groups = list(groups.values())
    return out

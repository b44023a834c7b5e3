"""The run list's filters and order, from the index page's query parameters (a plain GET form) and `/api/runs`'s.

Parameters (all optional; an unknown value reads as the default, never as an error page):

- `label` — runs whose label contains this text (any case); `since`, `until` — runs created on or after, on or
  before this day (`YYYY-MM-DD`, UTC; the day the manifest records, or an unreadable run's modification day);
- `status` — running, finished, failed or interrupted, as the manifest says;
- `sort` — `date` (the default), `label`, `run` or `rate` (the headline's pass rate); `order` — `desc` (the
  default) or `asc`. Runs with no value to sort by (no label, nothing attempted) come last either way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, get_args
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict

from farm.view.runs import RunSummary
from farm.view.unit_query import MAX_TEXT

Sort = Literal["date", "label", "run", "rate"]
SORTS: tuple[str, ...] = get_args(Sort)
STATUSES = ("running", "finished", "failed", "interrupted")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


class RunQuery(BaseModel):
    """The index page's filters and order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = ""
    since: str = ""
    until: str = ""
    status: str = ""
    sort: Sort = "date"
    order: Literal["asc", "desc"] = "desc"

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> RunQuery:
        """The query of a URL's parameters; unknown values fall back to the defaults."""

        def day(name: str) -> str:
            value = (params.get(name) or "").strip()
            return value if _DAY.fullmatch(value) else ""

        sort, status = params.get("sort") or "", params.get("status") or ""
        return cls(label=(params.get("label") or "").strip()[:MAX_TEXT], since=day("since"), until=day("until"),
                   status=status if status in STATUSES else "",
                   sort=sort if sort in SORTS else "date",
                   order="asc" if params.get("order") == "asc" else "desc")

    @property
    def filtered(self) -> bool:
        """Whether some run may be left out."""
        return bool(self.label or self.since or self.until or self.status)

    def keeps(self, row: RunSummary) -> bool:
        """Whether `row` passes the filters."""
        day = (row.created_at or "")[:10]
        return ((not self.label or self.label.casefold() in (row.label or "").casefold())
                and (not self.since or (bool(day) and day >= self.since))
                and (not self.until or (bool(day) and day <= self.until))
                and (not self.status or row.status == self.status))

    def apply(self, rows: list[RunSummary]) -> list[RunSummary]:
        """The rows kept, in the order asked for (ties by run id, in the same direction)."""
        kept = [r for r in rows if self.keeps(r)]
        known = [r for r in kept if _value(r, self.sort) is not None]
        unknown = [r for r in kept if _value(r, self.sort) is None]
        known.sort(key=lambda r: (_value(r, self.sort), r.run), reverse=self.order == "desc")
        unknown.sort(key=lambda r: r.run, reverse=self.order == "desc")
        return known + unknown

    def link(self, **changes: str) -> str:
        """`?…` for this query with `changes`; defaults are left out."""
        data = {**self.model_dump(), **changes}
        defaults = RunQuery().model_dump()
        kept = {k: v for k, v in data.items() if v != defaults[k] and v != ""}
        return "?" + urlencode(kept) if kept else "?"

    def sort_link(self, sort: str) -> str:
        """The link of a column heading: sort by it, or turn the order round when it is already the sort."""
        if sort == self.sort:
            return self.link(order="asc" if self.order == "desc" else "desc")
        return self.link(sort=sort, order="asc" if sort in ("label", "run") else "desc")


def _value(row: RunSummary, sort: str) -> str | float | None:
    if sort == "date":
        return row.created_at or None
    if sort == "label":
        return row.label.casefold() if row.label else None
    if sort == "rate":
        return row.headline.rate if row.headline is not None else None
    return row.run

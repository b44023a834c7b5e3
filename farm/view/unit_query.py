"""What the run page asks of a run's units: its query parameters, read leniently, and the SQL filter they make.

Parameters (all optional; a value the page does not know reads as its default, never as an error page):

- `verdict` — pass, fail, error or skipped (as the headline counts them, before human re-judgement);
- `outcome` — the record's outcome (succeeded, failed, confirmation, takeover, skipped, error);
- `category`, `phone` — one task category, one phone by its stable name (`farm.phone_name`);
- `task` — one task id (every instance and repeat of it: a grid cell's units with `phone`);
- `check`, `end` — the type of the first check that did not pass, the end reason (a failure group's units);
  for `category`, `check` and `end`, NONE (`-`) asks for units that have none;
- `q` — words searched, case-insensitively, in the task id, its goal, the answer and the checks' types and details;
- `tries` — `latest` (each unit's latest attempt, what the headline counts; the default) or `all`;
- `page` (from 1) and `per` (rows a page, one of PER_CHOICES);
- `gpage` — the page of the task × phone grid (`farm.view.run_grid`) and `group` — what failures are grouped by
  (one of GROUPINGS; `farm.view.failure_groups`): both leave the units table as it is.

Values reach DuckDB as bound parameters only: nothing from the URL is ever part of the SQL text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict

from farm.results.record import Outcome

Verdict = Literal["pass", "fail", "error", "skipped"]
VERDICTS: tuple[str, ...] = get_args(Verdict)
OUTCOMES: tuple[str, ...] = get_args(Outcome)
PER_CHOICES = (25, 50, 100, 200, 500)
PER_DEFAULT = 100
GROUPINGS = ("check", "end", "category")
"""What the run page groups failures by: the failing check's type, the end reason, the task's category."""
NONE = "-"
"""A `category`, `check` or `end` filter asking for units without one (no category, no failing check…)."""
_COLUMN = {"verdict": "verdict", "outcome": "outcome", "category": "category", "phone": "phone", "task": "task_id",
           "check": "check_type", "end": "end_reason"}
"""Each exact-match filter and the `units` column it compares."""
_MAY_BE_NONE = frozenset({"category", "check", "end"})
_VIEW_ONLY = frozenset({"page", "gpage", "group"})
"""Parameters that change what is shown but not which units the table lists (a change keeps the table's page)."""
MAX_TEXT = 200
"""Characters of a filter value or search kept (a longer one is cut: nothing in a run is searched for by a page)."""


class UnitQuery(BaseModel):
    """One run page's filters, search and page."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: str = ""
    outcome: str = ""
    category: str = ""
    phone: str = ""
    task: str = ""
    check: str = ""
    end: str = ""
    q: str = ""
    tries: Literal["latest", "all"] = "latest"
    page: int = 1
    per: int = PER_DEFAULT
    gpage: int = 1
    group: str = GROUPINGS[0]

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> UnitQuery:
        """The query of a URL's parameters; unknown values fall back to the defaults."""

        def text(name: str) -> str:
            return (params.get(name) or "").strip()[:MAX_TEXT]

        verdict, outcome, group = text("verdict"), text("outcome"), text("group")
        per = _int(params.get("per"), PER_DEFAULT)
        return cls(
            verdict=verdict if verdict in VERDICTS else "", outcome=outcome if outcome in OUTCOMES else "",
            category=text("category"), phone=text("phone"), task=text("task"), check=text("check"),
            end=text("end"), q=text("q"), tries="all" if params.get("tries") == "all" else "latest",
            page=max(1, _int(params.get("page"), 1)), per=per if per in PER_CHOICES else PER_DEFAULT,
            gpage=max(1, _int(params.get("gpage"), 1)), group=group if group in GROUPINGS else GROUPINGS[0],
        )

    @property
    def filtered(self) -> bool:
        """Whether anything narrows the list beyond the tries shown."""
        return bool(self.q or any(getattr(self, name) for name in _COLUMN))

    def where(self) -> tuple[str, list[object]]:
        """The SQL condition over the `units` table (see `farm.view.unit_index`) and its bound values."""
        terms: list[str] = []
        values: list[object] = []
        if self.tries == "latest":
            terms.append("latest")
        for name, column in _COLUMN.items():
            value = getattr(self, name)
            if value == NONE and name in _MAY_BE_NONE:
                terms.append(f"coalesce({column}, '') = ''")
            elif value:
                terms.append(f"{column} = ?")
                values.append(value)
        for word in self.q.split():
            # strpos, not LIKE: a `%` or `_` in what was typed is looked for as itself.
            terms.append("strpos(haystack, lower(?)) > 0")
            values.append(word)
        return (" AND ".join(terms) or "true"), values

    def link(self, **changes: object) -> str:
        """`?…` for this query with `changes` (a filter change takes the table back to its page 1); defaults are
        left out."""
        data = self.model_dump()
        if any(name not in _VIEW_ONLY for name in changes):
            data["page"] = 1
        data.update(changes)
        defaults = UnitQuery().model_dump()
        kept = {k: v for k, v in data.items() if v != defaults[k] and v != ""}
        return "?" + urlencode(kept) if kept else "?"


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default

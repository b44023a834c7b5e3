"""Two units side by side — the same task in two runs, on two phones or in two repeats — their trajectories
aligned step by step, and the first step where they part marked; and, for two runs, their units paired so any
pair is one click from its side-by-side page.

Steps are aligned by position (step 1 with step 1): the agents start from the same task, and where they part is
what a reader looks for. Two steps are alike when the agent did the same thing in the same app: the same tool with
the same arguments, the screen in the same package. The first step that is not alike — or that only one side has —
is the divergence.

Units of two runs are paired by lane, task, instance, phone and repeat (latest tries); what is left unpaired of a
task (the runs used other phones) is paired in phone order, repeat by repeat, so two runs on different phones still
line up. Pairs whose verdict changed come first: passed in A and not in B, then the reverse, then other changes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict

from pydantic import BaseModel, ConfigDict, Field

from farm.view.trajectory import StepView, Trajectory
from farm.view.unit_index import UnitIndex
from farm.view.unit_relations import UnitId, latest_units

MAX_PAIRS = 500
"""Pairs of two runs listed on one page (a search narrows them)."""


class SideRow(BaseModel):
    """One aligned step."""

    model_config = ConfigDict(extra="forbid")

    index: int
    """Position, from 1."""
    a: StepView | None = None
    b: StepView | None = None
    alike: bool
    """Same tool, arguments and app on both sides."""


class SideBySide(BaseModel):
    """Two trajectories aligned."""

    model_config = ConfigDict(extra="forbid")

    a: Trajectory
    b: Trajectory
    rows: list[SideRow] = Field(default_factory=list)
    diverge: int | None = None
    """Position of the first step that is not alike; null when every step is."""


def _action(step: StepView) -> tuple[str | None, str, str, str | None]:
    return step.tool, step.args, step.package, step.problem


def align(a: Trajectory, b: Trajectory) -> SideBySide:
    """`a` and `b` step by step, with their first divergence."""
    out = SideBySide(a=a, b=b)
    for i in range(max(len(a.steps), len(b.steps))):
        sa = a.steps[i] if i < len(a.steps) else None
        sb = b.steps[i] if i < len(b.steps) else None
        alike = sa is not None and sb is not None and _action(sa) == _action(sb)
        out.rows.append(SideRow(index=i + 1, a=sa, b=sb, alike=alike))
        if not alike and out.diverge is None:
            out.diverge = i + 1
    return out


class Pair(BaseModel):
    """A unit of run A and its counterpart in run B (either may be missing)."""

    model_config = ConfigDict(extra="forbid")

    lane: str
    task_id: str
    instance: str
    phone_a: str | None = None
    phone_b: str | None = None
    repeat: int
    key_a: str | None = None
    verdict_a: str | None = None
    key_b: str | None = None
    verdict_b: str | None = None
    change: int
    """0: passed in A, not in B; 1: the reverse; 2: another change (or one side missing); 3: alike."""


class Pairing(BaseModel):
    """The page's pairs of two runs."""

    model_config = ConfigDict(extra="forbid")

    shown: list[Pair] = Field(default_factory=list)
    """The first MAX_PAIRS pairs the search keeps, changed first."""
    matching: int = 0
    """Pairs the search keeps."""
    total: int = 0
    counts: list[int] = Field(default_factory=lambda: [0, 0, 0])
    """Pairs of each change 0, 1, 2 (see `Pair.change`), over all pairs."""


_Row = tuple[int, str, str, str, str, int, UnitId | None, UnitId | None]
"""(change, task, instance, lane, phone, repeat, A's unit, B's unit): a pair before it is shown (sorts as shown)."""


def _change(va: str | None, vb: str | None) -> int:
    if va == vb:
        return 3
    if va == "pass":
        return 0
    return 1 if vb == "pass" else 2


_Units = dict[UnitId, tuple[str, str]]
CACHED_PAIRINGS = 4
"""Pairings of two runs kept (the latest asked): a page of another search or another page costs no new pairing."""
_CACHE: OrderedDict[tuple[int, int], tuple[UnitIndex, UnitIndex, list[_Row], _Units, _Units]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _paired(a: UnitIndex, b: UnitIndex) -> tuple[list[_Row], _Units, _Units]:
    """Every pair of A and B, sorted as shown; kept while both indexes are the current ones (an index is built
    anew when its run's records change, so the pairing of the old ones is never asked again)."""
    key = (id(a), id(b))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is a and hit[1] is b:
            _CACHE.move_to_end(key)
            return hit[2], hit[3], hit[4]
    ua, ub = latest_units(a), latest_units(b)
    rows: list[_Row] = []

    def add(x: UnitId | None, y: UnitId | None) -> None:
        some = x or y
        assert some is not None
        change = _change(ua[x][1] if x else None, ub[y][1] if y else None)
        rows.append((change, some[1], some[2], some[0], some[3], some[4], x, y))

    for uid in set(ua) & set(ub):
        add(uid, uid)
    left_a: dict[tuple[str, str, str, int], list[UnitId]] = defaultdict(list)
    left_b: dict[tuple[str, str, str, int], list[UnitId]] = defaultdict(list)
    for uid in sorted(set(ua) - set(ub)):
        left_a[(uid[0], uid[1], uid[2], uid[4])].append(uid)
    for uid in sorted(set(ub) - set(ua)):
        left_b[(uid[0], uid[1], uid[2], uid[4])].append(uid)
    for task in set(left_a) | set(left_b):
        xs, ys = left_a.get(task, []), left_b.get(task, [])
        for i in range(max(len(xs), len(ys))):
            add(xs[i] if i < len(xs) else None, ys[i] if i < len(ys) else None)
    rows.sort(key=lambda r: r[:6])
    with _CACHE_LOCK:
        _CACHE[key] = (a, b, rows, ua, ub)  # holding both indexes keeps their ids from being reused meanwhile
        _CACHE.move_to_end(key)
        while len(_CACHE) > CACHED_PAIRINGS:
            _CACHE.popitem(last=False)
    return rows, ua, ub


def pair_units(a: UnitIndex, b: UnitIndex, q: str = "", changed: bool = False, limit: int = MAX_PAIRS) -> Pairing:
    """Every unit of A and of B paired (see the module docstring), changed pairs first, then by task; the pairs
    whose task id holds every word of `q` (case-insensitive), only the changed ones with `changed`. Pairs are
    tuples until shown: a 100 000-unit run makes as many."""
    rows, ua, ub = _paired(a, b)
    out = Pairing(total=len(rows), counts=[sum(r[0] == c for r in rows) for c in range(3)])
    words = q.lower().split()
    kept = [r for r in rows if (not changed or r[0] < 3) and all(w in r[1].lower() for w in words)]
    out.matching = len(kept)
    for r in kept[:limit]:
        x, y = r[6], r[7]
        out.shown.append(Pair(lane=r[3], task_id=r[1], instance=r[2], repeat=r[5], phone_a=x[3] if x else None,
                              phone_b=y[3] if y else None, key_a=ua[x][0] if x else None,
                              verdict_a=ua[x][1] if x else None, key_b=ub[y][0] if y else None,
                              verdict_b=ub[y][1] if y else None, change=r[0]))
    return out

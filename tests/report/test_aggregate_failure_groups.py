"""The "Not passed" groups rank the failed attempts only, then count the phones of the listed groups: the same groups,
counts, order and total as grouping every attempt, past the list cap, with ties, skips and tasks without category."""

from __future__ import annotations

import random
from pathlib import Path

from farm.report.aggregate import LIST_CAP, aggregate
from tests.helpers.records import record, write_run

# Every attempt grouped at once: what the groups were before only the failed attempts were ranked.
EVERY_ATTEMPT = (
    "SELECT run, task_id, coalesce(category, '') AS category,"
    " count(DISTINCT device) FILTER (WHERE NOT final) AS phones_failed, count(DISTINCT device) AS phones_run,"
    " count(*) FILTER (WHERE NOT final) AS units_failed, count(*) OVER () AS total"
    " FROM shown WHERE outcome <> 'skipped' GROUP BY ALL HAVING count(*) FILTER (WHERE NOT final) > 0"
    f" ORDER BY phones_failed DESC, units_failed DESC, category, task_id, run LIMIT {LIST_CAP}"
)


def _run(tmp_path: Path, seed: int, tasks: int) -> Path:
    rng = random.Random(seed)
    phones = [f"S{i}" for i in range(4)]
    recs = []
    for t in range(tasks):
        category = ["read/system", "write", ""][t % 3]  # a task has one category; some tasks have none
        for phone in rng.sample(phones, rng.randint(1, len(phones))):
            for repeat in range(1, rng.randint(1, 2) + 1):
                outcome = rng.choice(["succeeded", "failed", "failed", "skipped", "error"])
                recs.append(record(
                    f"task-{t}", run="r", device=phone, repeat=repeat, outcome=outcome,
                    passed=outcome == "succeeded", category=category,
                ))
    return write_run(tmp_path, "r", recs, [(p, "Pixel 8") for p in phones])


def test_the_groups_are_those_of_every_attempt_grouped_at_once(tmp_path: Path) -> None:
    for seed, tasks in ((1, 40), (2, 900)):
        run_dir = _run(tmp_path / str(seed), seed, tasks)
        agg = aggregate([run_dir])
        ranked = agg.con.execute("SELECT * FROM failure_groups").fetchall()
        assert ranked == agg.con.execute(EVERY_ATTEMPT).fetchall()
        total = ranked[0][-1]
        assert agg.data.failure_groups_total == total
        assert len(agg.data.failure_groups) == min(total, LIST_CAP)
        if tasks > 100:
            assert total > LIST_CAP  # the cap is crossed: ranking before counting matters
        assert any(g.phones_run > g.phones_failed for g in agg.data.failure_groups)

"""Apply human re-judgements (人工改判) to the latest attempt of each unit: the final verdicts, and the rows
the report lists (applied and refused)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from farm import manifest as mf
from farm.android.pull_limits import read_at_most, size_text
from farm.report.model import OverrideRow
from farm.results import duck
from farm.scoring import overrides as ov

if TYPE_CHECKING:
    import duckdb

UnitKey = tuple[str, str, str, str, str, int]
"""(run, lane, device, task_id, instance, repeat), as `Record.unit_key`."""

# (lane, serial, instance, repeat, initial verdict, answer, evidence, outcome, category) of an attempt an
# override names; evidence is the attempt's run record as its record names it (null: it names none).
_Match = tuple[str, str, str, int, bool, str | None, str | None, str, str | None]

NO_EVIDENCE = "refused: evidence is not the final answer, and this attempt's record names no screens to quote"
"""The note of an override on an attempt whose record names no run record (web, desktop, older runs): only its
final answer can be quoted."""
OUTSIDE_RUN = "refused: this attempt's evidence path leaves the run directory"
"""The note of an override on an attempt whose record names a run record outside its run directory."""

CATEGORY_SQL = (
    "coalesce(failure_category, CASE WHEN outcome = 'error' THEN 'infrastructure' WHEN login_handover THEN 'barrier'"
    " END)"
)
"""The failure category a report shows for an attempt that did not pass (null: unclassified)."""


@dataclass(frozen=True)
class Final:
    """What re-judgement made of one unit."""

    passed: bool
    """Final verdict."""
    category: str | None
    """Final failure category; None keeps the attempt's own."""

FEW_OVERRIDES = 64
"""Up to this many changed units, the final verdict is a SQL expression; beyond, a join."""


def short(text: str, limit: int = 160) -> str:
    """Whitespace collapsed, cut to `limit` characters with an ellipsis."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def named_sources(run_dir: Path) -> list[mf.OverrideSource]:
    """The files the run's lanes named as holding 人工改判 sections (manifest `override_sources`), in order."""
    if not mf.manifest_path(run_dir).is_file():
        return []
    sources: list[mf.OverrideSource] = []
    for lane in mf.load(run_dir).lanes:
        sources += [s for s in lane.override_sources if s not in sources]
    return sources


MAX_SUMMARY_BYTES = 4 * 1024 * 1024
"""Largest summary.md read for its 人工改判 section: it comes from the phone (a real one is a few KB); a larger one
is not read, and the report's re-judgement table says so."""


def _override_specs(run_dir: Path, extra: Sequence[Path], labels: dict[str, str],
                    refused: list[OverrideRow]) -> list[ov.OverrideSpec]:
    """`overrides.yaml`, the `--overrides` files and the named summary sections — nothing else is read. A summary
    too large to read is added to `refused`."""
    specs: list[ov.OverrideSpec] = []
    if (run_dir / "overrides.yaml").is_file():
        specs += ov.load_overrides_yaml(run_dir / "overrides.yaml")
    for path in extra:
        specs += ov.load_overrides_yaml(path)
    for source in named_sources(run_dir):
        summary = run_dir / source.path
        if not summary.is_file():
            # Named when it was pulled; a tree pruned since holds no re-judgements to apply.
            continue
        # Reports show the device's label, never its serial (which the path holds).
        shown_as = f"{labels.get(source.device, source.device)}/{summary.name}"
        data = read_at_most(summary, MAX_SUMMARY_BYTES)
        if data is None:
            refused.append(OverrideRow(
                run=run_dir.name, task_id="-", device=labels.get(source.device, source.device), initial="-",
                final="-", evidence=shown_as, applied=False,
                note=f"refused: {summary.name} larger than {size_text(MAX_SUMMARY_BYTES)}: not read"))
            continue
        text = data.decode("utf-8", errors="replace")
        for spec in ov.parse_summary_section(text, source=shown_as):
            specs.append(spec.model_copy(update={"device": source.device}))
    return specs


def _evidence_dir(run_dir: Path, evidence: str) -> Path | None:
    """The run record an attempt's `evidence` names, when it lies inside the run directory."""
    path = run_dir / evidence
    return path if path.resolve().is_relative_to(run_dir.resolve()) else None


def apply_overrides(
    con: duckdb.DuckDBPyConnection, run_dirs: Sequence[Path], extra: Sequence[Path], labels: dict[str, str]
) -> tuple[list[OverrideRow], dict[UnitKey, Final]]:
    """Decide every re-judgement against the `latest` attempts; the final verdicts (and failure categories) by
    unit, later ones winning.

    An override names a task (and optionally a phone): it is decided for every unit of that task —
    each instance and repeat — on its own evidence.
    """
    wanted: list[tuple[Path, ov.OverrideSpec]] = []
    refused: list[OverrideRow] = []
    for run_dir in run_dirs:
        wanted += [(run_dir, spec) for spec in _override_specs(run_dir, extra, labels, refused)]
    if not wanted:
        return refused, {}
    con.execute("CREATE TEMP TABLE ovr_want (idx INTEGER, run VARCHAR, task_id VARCHAR, device VARCHAR)")
    con.executemany(
        "INSERT INTO ovr_want VALUES (?, ?, ?, ?)",
        [(i, run_dir.name, spec.id, spec.device) for i, (run_dir, spec) in enumerate(wanted)],
    )
    matches: dict[int, list[_Match]] = {}
    # One pass over the records for all re-judgements, instead of one query each.
    for idx, *match in con.execute(
        "SELECT w.idx, l.lane, l.device, l.instance, l.repeat, l.initial, l.answer, l.evidence,"
        f" l.outcome, {CATEGORY_SQL.replace('failure_category', 'l.failure_category')} FROM latest l"
        " JOIN ovr_want w ON l.run = w.run AND l.task_id = w.task_id AND (w.device IS NULL OR l.device = w.device)"
        " WHERE l.outcome <> 'skipped' ORDER BY w.idx, l.device, l.instance, l.repeat, l.lane"
    ).fetchall():
        matches.setdefault(idx, []).append((match[0], match[1], match[2], int(match[3]), bool(match[4]),
                                            match[5], match[6], match[7], match[8]))
    rows: list[OverrideRow] = list(refused)
    finals: dict[UnitKey, Final] = {}
    for idx, (run_dir, spec) in enumerate(wanted):
        run = run_dir.name
        evidence = short(spec.evidence, 80)
        if idx not in matches:
            rows.append(OverrideRow(run=run, task_id=spec.id, device="-", initial="-", final=spec.to or "-",
                                    category_to=spec.category or "", evidence=evidence, applied=False,
                                    note="refused: no such attempt"))
        ordered = sorted(matches.get(idx, []), key=lambda m: (labels.get(m[1], m[1]), m[2], m[3], m[0]))
        for lane, serial, instance, repeat, initial, answer, evidence_path, outcome, category in ordered:
            unit = {"run": run, "task_id": spec.id, "device": labels.get(serial, serial), "instance": instance,
                    "repeat": repeat, "evidence": evidence, "category_from": category or ""}
            verdict = "pass" if initial else "fail"
            if outcome == "error":
                # An infrastructure error has no agent verdict to re-judge; it stays an error everywhere.
                rows.append(OverrideRow(**unit, initial=verdict, final=verdict, category_to=category or "",
                                        applied=False, note="refused: infrastructure error, no agent verdict"))
                continue
            # Only the lane that wrote a record knows where its run record is. A record that does not say
            # (written before records named it) is refused even when its answer holds the quote: results
            # would have to guess the lane's layout to find the rest of the record.
            record_dir = _evidence_dir(run_dir, evidence_path) if evidence_path else None
            if evidence_path and record_dir is None:
                rows.append(OverrideRow(**unit, initial=verdict, final=verdict, category_to=category or "",
                                        applied=False, note=OUTSIDE_RUN))
                continue
            # Without a run record the final answer is all there is to quote (it is in the record itself).
            texts = ov.evidence_texts(record_dir, answer) if record_dir else [answer] if answer else []
            decision = ov.decide(spec, serial, initial, texts, category)
            if record_dir is None and not decision.applied and decision.note.startswith("refused: evidence is"):
                decision = dataclasses.replace(decision, note=NO_EVIDENCE)
            final = (spec.to or decision.initial) if decision.applied else decision.initial
            to_category = decision.category if decision.applied and decision.category else category
            rows.append(OverrideRow(**unit, initial=decision.initial, final=final, category_to=to_category or "",
                                    applied=decision.applied, note=decision.note))
            if decision.applied:
                finals[(run, lane, serial, spec.id, instance, repeat)] = Final(final == "pass", decision.category)
    return rows, finals


@dataclass(frozen=True)
class FinalSql:
    """SQL over `latest l` for the final verdict and failure category, and the join they need."""

    final: str
    category: str
    join: str = ""


def final_sql(con: duckdb.DuckDBPyConnection, finals: dict[UnitKey, Final]) -> FinalSql:
    """The final verdict and category over `latest l` (expressions for a few re-judgements, else a join)."""
    if not finals:
        return FinalSql("l.initial", "l.failure_category")
    if len(finals) <= FEW_OVERRIDES:
        # An expression rather than a join keeps the rows in storage order (writers then need no sort).
        q = duck.sql_str

        def unit(key: UnitKey) -> str:
            r, la, d, t, i, k = key
            return (f"l.run = {q(r)} AND l.lane = {q(la)} AND l.device = {q(d)} AND l.task_id = {q(t)}"
                    f" AND l.instance = {q(i)} AND l.repeat = {int(k)}")

        tasks = ", ".join(q(t) for t in sorted({key[3] for key in finals}))
        verdicts = " ".join(f"WHEN {unit(key)} THEN {str(f.passed).lower()}" for key, f in finals.items())
        final = f"CASE WHEN l.task_id IN ({tasks}) THEN (CASE {verdicts} ELSE l.initial END) ELSE l.initial END"
        changed = {key: f.category for key, f in finals.items() if f.category is not None}
        if not changed:
            return FinalSql(final, "l.failure_category")
        cats = " ".join(f"WHEN {unit(key)} THEN {q(c)}" for key, c in changed.items())
        return FinalSql(final, f"CASE WHEN l.task_id IN ({tasks}) THEN (CASE {cats} ELSE l.failure_category END)"
                               " ELSE l.failure_category END")
    con.execute(
        "CREATE TEMP TABLE ovr (run VARCHAR, lane VARCHAR, device VARCHAR, task_id VARCHAR, instance VARCHAR,"
        " repeat BIGINT, final BOOLEAN, category VARCHAR)"
    )
    con.executemany(
        "INSERT INTO ovr VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(*k, f.passed, f.category) for k, f in finals.items()]
    )
    return FinalSql("coalesce(o.final, l.initial)", "coalesce(o.category, l.failure_category)",
                    f" LEFT JOIN ovr o USING ({', '.join(duck.UNIT)})")

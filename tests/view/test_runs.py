"""The run list: what each row says, newest first, and damaged runs listed with their reason."""

from __future__ import annotations

import os
from pathlib import Path

from farm import manifest as mf
from farm.report.headline import headline
from farm.results.store import RECORDS_FILE
from farm.view.runs import list_runs
from tests.helpers.records import record, write_run


def _stamp(run_dir: Path, created_at: str, **fields: object) -> None:
    def change(m: mf.Manifest) -> None:
        m.created_at = created_at
        for key, value in fields.items():
            setattr(m, key, value)

    mf.update(run_dir, change)


def test_rows_carry_label_date_rate_phones_and_fingerprint_newest_first(tmp_path: Path) -> None:
    old = write_run(tmp_path, "old", [record("a", run="old")], phones=[("S1", "Pixel 7")])
    recs = [record("a", run="new", device="S1"), record("b", run="new", device="S2", passed=False),
            record("c", run="new", device="S2", outcome="error", passed=False),
            record("d", run="new", device="S1", outcome="skipped", passed=False)]
    new = write_run(tmp_path, "new", recs, phones=[("S1", "Pixel 7"), ("S2", "Pixel 7")])
    _stamp(old, "2026-01-01T00:00:00Z", label="nightly")
    _stamp(new, "2026-02-01T00:00:00Z", code=mf.CodeFingerprint(git_commit="0123456789abcdef" * 2 + "01234567",
                                                                  diff_sha256="ff"))
    rows = list_runs(tmp_path)
    assert [r.run for r in rows] == ["new", "old"]
    row = rows[0]
    assert (row.state, row.created_at, row.fingerprint) == ("ok", "2026-02-01T00:00:00Z", "0123456789ab+diff")
    assert [(p.phone, p.device) for p in row.phones] == [("Pixel 7 · S1", "S1"), ("Pixel 7 · S2", "S2")]
    assert row.headline == headline(recs)
    assert (row.headline.attempted, row.headline.passed, row.headline.errors, row.headline.skipped) == (3, 1, 1, 1)
    assert rows[1].label == "nightly" and rows[1].fingerprint is not None


def test_a_run_with_a_damaged_manifest_is_listed_with_the_reason_and_the_others_still_are(tmp_path: Path) -> None:
    write_run(tmp_path, "good", [record("a", run="good")])
    bad = write_run(tmp_path, "bad", [record("a", run="bad")])
    mf.manifest_path(bad).write_text('{"manifest_version": 1, "run_id": ', encoding="utf-8")
    rows = {r.run: r for r in list_runs(tmp_path)}
    assert rows["good"].state == "ok"
    assert rows["bad"].state == "unreadable" and "invalid manifest" in rows["bad"].problems[0]
    assert rows["bad"].created_at is not None and rows["bad"].headline is not None


def test_skipped_record_lines_make_a_run_damaged_not_missing(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [record("a", run="r")])
    with (run_dir / RECORDS_FILE).open("ab") as fh:
        fh.write(b"\xff\xfe not a record\n")
    row = list_runs(tmp_path)[0]
    assert row.state == "damaged" and row.headline is not None and row.headline.attempted == 1
    assert row.problems == [f"{run_dir / RECORDS_FILE}:2: corrupt record line skipped"]


def test_records_without_a_manifest_and_a_run_linked_from_outside_are_listed_as_unreadable(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "no-manifest").mkdir()
    (runs / "no-manifest" / RECORDS_FILE).write_text(record("a", run="no-manifest").model_dump_json() + "\n")
    elsewhere = write_run(tmp_path, "elsewhere", [record("a", run="elsewhere")])
    os.symlink(elsewhere, runs / "linked")
    (runs / "history").mkdir()  # not a run: neither manifest nor records
    rows = {r.run: r for r in list_runs(runs)}
    assert set(rows) == {"no-manifest", "linked"}
    assert rows["no-manifest"].state == "unreadable" and "no manifest" in rows["no-manifest"].problems[0]
    assert rows["no-manifest"].headline is not None and rows["no-manifest"].headline.passed == 1
    assert rows["linked"].state == "unreadable" and rows["linked"].problems == ["linked: leaves the runs directory"]


def test_a_phone_recorded_before_names_were_takes_the_farm_yaml_label_the_manifest_kept(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [record("a", run="r", device="SER1")], phones=[("SER1", "Pixel 7")],
                        servers={"SER1": "10.0.0.2:5037"})
    _stamp(run_dir, "2026-01-01T00:00:00Z", config={"phone_labels": {"SER1": "Bench A"}})
    (row,) = list_runs(tmp_path)
    assert [(p.phone, p.device, p.adb_server, p.where) for p in row.phones] == [
        ("Bench A", "SER1", "10.0.0.2:5037", "SER1 on 10.0.0.2:5037")]


def test_a_phone_only_the_records_name_gets_its_stable_name_and_a_web_backend_keeps_its_own(tmp_path: Path) -> None:
    write_run(tmp_path, "r", [record("a", run="r", device="127.0.0.1:45949"),
                              record("order_lookup", run="r", device="playwright", lane="web")])
    (row,) = list_runs(tmp_path)
    assert [(p.phone, p.where) for p in row.phones] == [("device · 45949", "127.0.0.1:45949"),
                                                        ("playwright", "")]

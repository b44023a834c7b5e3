"""`farm history`'s computation: rates per night, regressions and fixes by task × phone, health (flaky tasks and the
task × night grid: test_history_flaky.py, test_history_grid.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.report.headline import headline
from farm.report.history_data import PairChange, load_history
from farm.results.stats import mcnemar_exact
from farm.results.store import RECORDS_FILE
from tests.helpers.history_nights import history, name, passes
from tests.helpers.nights import night_records, write_night
from tests.helpers.records import record

# Stable on every night: passes everywhere, fails everywhere.
STEADY = {("t-ok", "P1"): True, ("t-ok", "P2"): True, ("t-ok", "G1"): True, ("t-bad", "G1"): False}


def _three_nights(runs: Path, *, status2: str = "finished") -> None:
    """Planted: t-reg on the Galaxy G1 passes on nights 1–2 and fails on night 3; t-fix on the Pixels P1 and P2
    fails on nights 1–2 and passes on night 3."""
    for day, (reg, fix) in enumerate([(True, False), (True, False), (False, True)], start=1):
        verdicts = {**STEADY, ("t-reg", "G1"): reg, ("t-reg", "P1"): True, ("t-fix", "P1"): fix, ("t-fix", "P2"): fix}
        status = status2 if day == 2 else "finished"
        write_night(runs, f"n{day}", night_records(f"n{day}", verdicts), day=day, status=status)


def _keys(changes: list[PairChange]) -> list[tuple[str, str]]:
    return [(c.task_id, c.group) for c in changes]


def test_history_finds_exactly_the_planted_regression_and_fix(tmp_path: Path) -> None:
    _three_nights(tmp_path)
    h = load_history(tmp_path, label="nightly")
    assert [n.run_id for n in h.nights] == ["n1", "n2", "n3"]
    assert (h.previous, h.newest) == ("n2", "n3")
    assert _keys(h.regressions) == [("t-reg", "Galaxy S24 · G1")]
    assert _keys(h.fixes) == [("t-fix", "Pixel 8 · P1"), ("t-fix", "Pixel 8 · P2")]
    assert (h.new, h.gone, h.errors, h.health) == ([], [], [], [])
    # A verdict that changed from night to night is flaky too, and new: it was steady before.
    assert [(f.task_id, f.new) for f in h.flaky] == [("t-fix", True), ("t-reg", True)]


def test_the_regression_says_what_passed_before_and_what_failed_now(tmp_path: Path) -> None:
    _three_nights(tmp_path)
    (reg,) = load_history(tmp_path, label="nightly").regressions
    assert (reg.before_passed, reg.before_failed, reg.after_passed, reg.after_failed) == (1, 0, 0, 1)
    assert reg.phones == ["Galaxy S24 · G1"]
    assert reg.reasons == ["failed"]


def test_mcnemar_is_exact_over_the_pairs_judged_on_both_nights(tmp_path: Path) -> None:
    _three_nights(tmp_path)
    h = load_history(tmp_path, label="nightly")
    # t-ok × P1, P2, G1; t-bad × G1; t-reg × G1, P1; t-fix × P1, P2.
    assert h.paired == 8
    assert h.mcnemar_p == mcnemar_exact(1, 2) == 1.0


def test_six_regressions_and_no_fix_give_the_exact_binomial_p(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(6)]
    write_night(tmp_path, "a", night_records("a", {(t, "G1"): True for t in tasks}), day=1)
    write_night(tmp_path, "b", night_records("b", {(t, "G1"): False for t in tasks}), day=2)
    h = load_history(tmp_path)
    assert len(h.regressions) == 6 and h.fixes == []
    assert h.mcnemar_p == pytest.approx(2 / 2**6)


def test_a_run_with_another_label_is_ignored(tmp_path: Path) -> None:
    _three_nights(tmp_path)
    write_night(tmp_path, "w4", night_records("w4", {("t-reg", "G1"): True}), day=4, label="weekly")
    h = load_history(tmp_path, label="nightly")
    assert [n.run_id for n in h.nights] == ["n1", "n2", "n3"]
    assert _keys(h.regressions) == [("t-reg", "Galaxy S24 · G1")]


def test_without_a_label_every_run_with_a_manifest_counts(tmp_path: Path) -> None:
    _three_nights(tmp_path)
    write_night(tmp_path, "w4", night_records("w4", {("t-reg", "G1"): True}), day=4, label=None)
    h = load_history(tmp_path)
    assert [n.run_id for n in h.nights] == ["n1", "n2", "n3", "w4"]
    assert h.label is None


def test_an_interrupted_night_is_shown_and_marked(tmp_path: Path) -> None:
    _three_nights(tmp_path, status2="interrupted")
    h = load_history(tmp_path, label="nightly")
    assert [n.status for n in h.nights] == ["finished", "interrupted", "finished"]


def test_nights_are_ordered_by_creation_time_and_the_last_n_kept(tmp_path: Path) -> None:
    # Directory names sort the other way round: only created_at orders nights.
    write_night(tmp_path, "z-first", night_records("z-first", {("t", "G1"): True}), day=1)
    write_night(tmp_path, "b-third", night_records("b-third", {("t", "G1"): False}), day=3)
    write_night(tmp_path, "m-second", night_records("m-second", {("t", "G1"): True}), day=2)
    h = load_history(tmp_path, label="nightly", last=2)
    assert [n.run_id for n in h.nights] == ["m-second", "b-third"]
    assert _keys(h.regressions) == [("t", "Galaxy S24 · G1")]


def test_a_skipped_unit_is_never_a_regression(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): True}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "G1"): "skipped"}), day=2)
    h = load_history(tmp_path)
    assert (h.regressions, h.fixes, h.new, h.gone, h.paired) == ([], [], [], [], 0)


def test_an_infrastructure_error_is_not_a_regression_and_is_listed_apart(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): True}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "G1"): "error"}), day=2)
    h = load_history(tmp_path)
    assert h.regressions == [] and h.paired == 0
    assert [(e.task_id, e.phone, e.reason) for e in h.errors] == [("t", "Galaxy S24 · G1", "error on G1")]
    assert h.nights[-1].overall.errors == 1 and h.nights[-1].overall.attempted == 1


def test_an_error_on_one_phone_leaves_its_pair_unjudged_and_a_failure_on_another_counts(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "P1"): True, ("t", "P2"): True}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "P1"): "error", ("t", "P2"): False}), day=2)
    h = load_history(tmp_path)
    (reg,) = h.regressions
    assert (reg.group, reg.after_passed, reg.after_failed, reg.phones) == ("Pixel 8 · P2", 0, 1, ["Pixel 8 · P2"])
    assert h.paired == 1


def test_a_retried_error_counts_its_latest_attempt_only(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): True}), day=1)
    recs = [record("t", run="b", device="G1", passed=False, outcome="error", attempt=1),
            record("t", run="b", device="G1", passed=True, attempt=2)]
    write_night(tmp_path, "b", recs, day=2)
    h = load_history(tmp_path)
    assert (h.errors, h.regressions, h.paired) == ([], [], 1)


def test_a_task_only_on_the_newest_night_is_new_not_a_regression(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): True}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "G1"): True, ("t-new", "G1"): False}), day=2)
    h = load_history(tmp_path)
    assert h.regressions == []
    assert _keys(h.new) == [("t-new", "Galaxy S24 · G1")]


def test_a_task_missing_from_the_newest_night_is_gone_not_a_fix(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): True, ("t-old", "G1"): False}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "G1"): True}), day=2)
    h = load_history(tmp_path)
    assert h.fixes == [] and _keys(h.gone) == [("t-old", "Galaxy S24 · G1")]


def test_two_phones_of_one_model_are_two_pairs(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "P1"): True, ("t", "P2"): True}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "P1"): False, ("t", "P2"): False}), day=2)
    h = load_history(tmp_path)
    assert h.paired == 2
    assert [(c.group, c.after_failed, c.phones) for c in h.regressions] == [
        ("Pixel 8 · P1", 1, ["Pixel 8 · P1"]), ("Pixel 8 · P2", 1, ["Pixel 8 · P2"])]


def test_a_task_falling_from_5_passes_to_1_on_six_phones_is_4_regressions() -> None:
    h = history(passes("read/system", 5), passes("read/system", 1))
    assert h.paired == 6
    assert _keys(h.regressions) == [("read/system", name(s)) for s in ("S2", "S3", "S4", "S5")]
    assert h.fixes == []
    assert h.mcnemar_p == mcnemar_exact(4, 0)


def test_a_task_swapping_which_phone_fails_is_a_regression_and_a_fix() -> None:
    h = history(passes("t", 5), {**passes("t", 5), ("t", "S6"): True, ("t", "S1"): False})
    assert (_keys(h.regressions), _keys(h.fixes)) == ([("t", name("S1"))], [("t", name("S6"))])


def test_one_phone_regressing_on_its_repeats_is_one_row_naming_the_phone() -> None:
    h = history({("t", "S1"): [True, True, True]}, {("t", "S1"): [True, False, False]})
    (reg,) = h.regressions
    assert (reg.group, reg.phones, reg.before_passed, reg.after_passed, reg.after_failed) == (
        name("S1"), [name("S1")], 3, 1, 2)


def test_one_of_two_phones_failing_is_one_regression_and_the_task_newly_flaky(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "P1"): True, ("t", "P2"): True}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "P1"): True, ("t", "P2"): False}), day=2)
    h = load_history(tmp_path)
    assert _keys(h.regressions) == [("t", "Pixel 8 · P2")]
    assert [(f.task_id, f.new, f.nights_mixed, f.nights_passed, f.phones) for f in h.flaky] == [
        ("t", True, 1, 1, ["Pixel 8 · P2"])]


def test_a_fix_needs_every_judged_unit_of_the_phone_to_pass_now(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): [False, False]}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "G1"): [True, False]}), day=2)
    h = load_history(tmp_path)
    assert (h.fixes, h.regressions) == ([], [])
    assert [(f.new, f.nights_failed, f.nights_mixed) for f in h.flaky] == [(True, 1, 1)]


def test_the_same_task_on_another_phone_of_the_same_model_never_pairs(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "P1"): True}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "P2"): False}), day=2)
    h = load_history(tmp_path)
    assert h.regressions == [] and h.paired == 0
    assert (_keys(h.gone), _keys(h.new)) == ([("t", "Pixel 8 · P1")], [("t", "Pixel 8 · P2")])


def test_a_phone_missing_from_one_manifest_keeps_the_name_another_night_gave_it(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): True}), day=1)
    write_night(tmp_path, "b", night_records("b", {("t", "G1"): False}), day=2, phones=())
    assert _keys(load_history(tmp_path).regressions) == [("t", "Galaxy S24 · G1")]


def test_a_phone_of_unknown_model_is_named_by_its_serial(tmp_path: Path) -> None:
    for day, ok in ((1, True), (2, False)):
        write_night(tmp_path, f"r{day}", night_records(f"r{day}", {("t", "Q7"): ok, ("t", "Q8"): True}), day=day,
                    phones=())
    assert _keys(load_history(tmp_path).regressions) == [("t", "device · Q7")]


def test_web_records_pair_by_device(tmp_path: Path) -> None:
    for day, ok in ((1, True), (2, False)):
        recs = [record("w", run=f"r{day}", lane="web", device=d, passed=ok if d == "chromium" else True)
                for d in ("chromium", "firefox")]
        write_night(tmp_path, f"r{day}", recs, day=day, phones=())
    h = load_history(tmp_path)
    assert [(c.lane, c.task_id, c.group) for c in h.regressions] == [("web", "w", "chromium")]


def test_phone_health_changes_are_listed_with_their_reason(tmp_path: Path) -> None:
    recs = {("t", "G1"): True}
    write_night(tmp_path, "a", night_records("a", recs), day=1)
    write_night(tmp_path, "b", night_records("b", recs), day=2, left_out={"P2": "battery 5% and not charging"})
    write_night(tmp_path, "c", night_records("c", recs), day=3,
                phones=[("P1", "Pixel 8"), ("P2", "Pixel 8"), ("G1", "Galaxy S24"), ("X9", "Pixel 9")])
    write_night(tmp_path, "d", night_records("d", recs), day=4, phones=[("P2", "Pixel 8"), ("G1", "Galaxy S24")])
    changes = [(c.before_run, c.after_run, c.phone, c.kind, c.reason) for c in load_history(tmp_path).health]
    assert changes == [
        ("a", "b", "Pixel 8 · P2", "left_out", "battery 5% and not charging"),
        ("b", "c", "Pixel 8 · P2", "back", "battery 5% and not charging"),
        ("b", "c", "Pixel 9 · X9", "appeared", None),
        ("c", "d", "Pixel 8 · P1", "disappeared", None),
        ("c", "d", "Pixel 9 · X9", "disappeared", None),
    ]


def test_rates_equal_the_headline_of_each_nights_records(tmp_path: Path) -> None:
    nights = {}
    for day in (1, 2):
        recs = night_records(f"r{day}", {**STEADY, ("t-x", "P1"): [True, "skipped", "error", day == 2]})
        recs += [record("t-cat", run=f"r{day}", device="P2", category="write", passed=day == 1)]
        write_night(tmp_path, f"r{day}", recs, day=day)
        nights[f"r{day}"] = recs
    for row in load_history(tmp_path).nights:
        recs = nights[row.run_id]
        assert row.overall == headline(recs, key=row.run_id)
        assert row.by_category == [headline([r for r in recs if r.category == c], key=c)
                                   for c in ("read/system", "write")]


def test_the_holdout_pool_is_hidden_unless_asked_for(tmp_path: Path) -> None:
    for day in (1, 2):
        recs = [record("t", run=f"r{day}", device="G1"),
                record("h", run=f"r{day}", device="G1", partition="holdout", passed=day == 1)]
        write_night(tmp_path, f"r{day}", recs, day=day)
    hidden, shown = load_history(tmp_path), load_history(tmp_path, include_holdout=True)
    assert (hidden.regressions, hidden.hidden_holdout, hidden.nights[0].overall.attempted) == ([], 2, 1)
    assert (_keys(shown.regressions), shown.hidden_holdout) == ([("h", "Galaxy S24 · G1")], 0)


def test_a_damaged_record_line_is_skipped_and_named(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): True}), day=1)
    run_dir = write_night(tmp_path, "b", night_records("b", {("t", "G1"): True}), day=2)
    with (run_dir / RECORDS_FILE).open("a", encoding="utf-8") as fh:
        fh.write('{"run": "b", "lane": "andr')
    h = load_history(tmp_path)
    assert h.nights[-1].overall.attempted == 1
    assert h.warnings == [f"{run_dir / RECORDS_FILE}:2: torn last line (an append cut short, no newline at the end)"
                          " skipped"]


def test_a_broken_manifest_leaves_its_run_out_with_a_warning(tmp_path: Path) -> None:
    _three_nights(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json", encoding="utf-8")
    h = load_history(tmp_path, label="nightly")
    assert len(h.nights) == 3
    assert len(h.warnings) == 1 and "broken/manifest.json: invalid manifest" in h.warnings[0]


def test_a_single_night_has_nothing_to_compare_but_its_mixed_task_is_flaky(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): [True, False]}), day=1)
    h = load_history(tmp_path)
    assert (h.previous, h.mcnemar_p, h.regressions, h.paired) == (None, None, [], 0)
    assert [(f.task_id, f.nights_mixed, f.new) for f in h.flaky] == [("t", 1, True)]
    assert h.flaky_nights == 1


def test_no_run_with_the_label_is_a_one_line_error_naming_label_and_place(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): True}), day=1, label="weekly")
    with pytest.raises(FarmError) as exc:
        load_history(tmp_path, label="nightly")
    assert exc.value.line().startswith(f"{tmp_path}: no runs labelled 'nightly'")


def test_a_missing_runs_directory_is_a_farm_error(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="no such runs directory.*'nightly'"):
        load_history(tmp_path / "nope", label="nightly")

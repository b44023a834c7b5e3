"""The tap drawn over a step's screenshot (farm.view.tap_marks), and an agent app's
final.json read per the contract (its evidence shown, the harness's own look beside it)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from farm.results.record import CheckResult
from farm.scoring.evidence import FreshLook
from farm.scoring.transcript import FinalFile
from farm.view import tap_marks as tm
from farm.view.tap_marks import ImageSize, image_size, mark_for
from farm.view.trajectory import Trajectory, load_trajectory, read_steps
from farm.view.units import load_units
from tests.helpers.host import make_evidence
from tests.helpers.records import record
from tests.view.builders import EVIDENCE, RUN, host_step, make_run, write_lines

SIZE = ImageSize(432, 960)


def _image(fmt: str, size: tuple[int, int] = (432, 960), **save: Any) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 220, 240)).save(out, fmt, **save)
    return out.getvalue()


@pytest.mark.parametrize(("fmt", "save"), [
    ("PNG", {}), ("GIF", {}), ("JPEG", {}), ("JPEG", {"progressive": True}),
    # An EXIF segment before the frame header: the size is further in than a fixed offset.
    ("JPEG", {"exif": b"Exif\x00\x00" + b"\x00" * 20_000}),
    ("WEBP", {"quality": 50}), ("WEBP", {"lossless": True}), ("WEBP", {"exif": b"Exif\x00\x00abc"}),
])
def test_the_size_comes_from_the_header_of_every_screenshot_format(tmp_path: Path, fmt: str,
                                                                   save: dict[str, Any]) -> None:
    path = tmp_path / "shot"
    path.write_bytes(_image(fmt, (433, 961), **save))
    assert image_size(path) == ImageSize(433, 961)


@pytest.mark.parametrize("data", [
    b"", b"not an image", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff\xe0\x00\x10JFIF" + b"\x00" * 64,
    b"\xff\xd8\xff\xe0\x00\x01", b"RIFF\x00\x00\x00\x00WEBPVP8 ", b"\xff\xd8" + b"\xff" * 1000,
    # A header claiming a zero or an absurd side.
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x00\x00\x00\x00\x10",
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xff\xff\xff\x00\x00\x00\x10",
])
def test_a_damaged_or_foreign_header_gives_no_size(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "shot.png"
    path.write_bytes(data)
    assert image_size(path) is None
    assert image_size(tmp_path / "absent.png") is None


def test_a_tap_at_x_y_is_a_ring_at_that_pixel() -> None:
    mark, note = mark_for("tap", {"x": 216, "y": 480}, SIZE)
    assert note is None and mark is not None
    assert (mark.kind, mark.x, mark.y, mark.label) == ("tap", 216, 480, "tap at (216, 480)")
    assert mark.radius == pytest.approx(tm.MARK_RADIUS * 432)
    long_press = mark_for("long_press", {"x": 0, "y": 959.5}, SIZE)[0]
    assert long_press is not None and long_press.label == "long press at (0, 959.5)"


@pytest.mark.parametrize(("args", "note"), [
    ({"x": 432, "y": 10}, "tap at (432, 10) is outside the 432×960 screenshot, not drawn"),
    ({"x": -1, "y": 10}, "tap at (-1, 10) is outside the 432×960 screenshot, not drawn"),
    ({"x": 1080, "y": 2400}, "tap at (1080, 2400) is outside the 432×960 screenshot, not drawn"),
    ({"x": "<b>1</b>", "y": 10}, "tap: x and y are not both numbers, not drawn"),
    ({"x": True, "y": 10}, "tap: x and y are not both numbers, not drawn"),
    ({"x": float("nan"), "y": 10}, "tap: x and y are not both numbers, not drawn"),
    ({"x": 5}, "tap: x and y are not both numbers, not drawn"),
])
def test_a_tap_outside_the_image_or_not_a_number_is_not_drawn_and_says_why(args: dict[str, Any],
                                                                            note: str) -> None:
    assert mark_for("tap", args, SIZE) == (None, note)


def test_a_swipe_is_a_line_from_its_points_or_where_the_host_swipes_for_its_direction() -> None:
    mark = mark_for("swipe", {"x1": 100, "y1": 800, "x2": 100, "y2": 200}, SIZE)[0]
    assert mark is not None and (mark.kind, mark.x, mark.y, mark.x2, mark.y2) == ("swipe", 100, 800, 100, 200)
    assert mark.label == "swipe from (100, 800) to (100, 200)" and mark.head.count(",") == 3
    up = mark_for("swipe", {"direction": "up"}, SIZE)[0]
    # host_agent.actions: from the centre, 30 % of the height each way.
    assert up is not None and (up.x, up.y, up.x2, up.y2) == (216, 768, 216, 192)
    left = mark_for("swipe", {"direction": "left"}, SIZE)[0]
    assert left is not None and (left.x, left.x2) == pytest.approx((0.85 * 432, 0.15 * 432))
    assert mark_for("swipe", {"x1": 100, "y1": 800, "x2": 100, "y2": 2000}, SIZE) == (
        None, "swipe from (100, 800) to (100, 2000) leaves the 432×960 screenshot, not drawn")
    assert mark_for("swipe", {"direction": "sideways"}, SIZE) == (None, None)


def test_calls_without_a_position_draw_nothing_and_say_nothing() -> None:
    for tool, args in [("tap", {"ref": 3}), ("back", {}), ("answer", {"text": "x=1"}), ("type", {"x": 1, "y": 2}),
                       (None, {"x": 1, "y": 2}), ("tap", "x=1,y=2")]:
        assert mark_for(tool, args, SIZE) == (None, None)
    assert mark_for("tap", {"x": 1, "y": 2}, None) == (
        None, "tap at (1, 2): the screenshot's size is unreadable, not drawn")


def test_a_step_has_its_screenshots_size_and_its_mark_when_the_screenshot_is_shown(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    (run_dir / EVIDENCE / "shot-a.png").write_bytes(_image("PNG"))
    screen = 'app: com.android.calculator2\n[1] Button "7" click\n[12] Button "=" click'
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [
        host_step(1, screen, screenshot="shot-a.png", args={"x": 100, "y": 200}),
        host_step(2, screen, screenshot="shot-a.png", args={"ref": 12}),
        host_step(3, screen, screenshot="shot-a.png", args={"ref": 2}),
        host_step(4, screen, screenshot="shot-gone.png", args={"x": 100, "y": 200}),
        host_step(5, screen, screenshot="shot-a.png", args={"x": 5000, "y": 200}),
    ])
    steps, problems = read_steps(run_dir, EVIDENCE)
    assert problems == []
    tap, by_ref, no_such_ref, missing, outside = steps
    assert tap.shot_size == SIZE and tap.mark is not None and (tap.mark.x, tap.mark.y) == (100, 200)
    assert by_ref.mark is None and by_ref.mark_note is None and by_ref.args == '{"ref": 12}'
    assert no_such_ref.shot_size == SIZE and no_such_ref.mark is None
    # No screenshot shown, so no mark to lay on it; the call's arguments are still its text.
    assert (missing.screenshot, missing.mark, missing.mark_note) == (None, None, None)
    assert missing.screenshot_note == "screenshot file missing: shot-gone.png" and '"x": 100' in missing.args
    assert outside.mark is None
    assert outside.mark_note == "tap at (5000, 200) is outside the 432×960 screenshot, not drawn"


# --- final.json -------------------------------------------------------------------------------------------------

APP_EVIDENCE: dict[str, Any] = {
    "end": "answer", "answer": "已设好 7 点的闹钟", "endReason": "",
    "screenReads": [{"step": 2, "text": '[1] TextView "上午7:00"', "package": "com.android.deskclock"}],
    "asks": [{"step": 1, "question": "闹钟定几点?", "reply": "7点", "matched": "几点"}],
    "confirmations": [], "handOver": None, "packagesUsed": ["com.android.deskclock"], "steps": 2, "stepErrors": 0,
}
LOOK = {"writtenBy": "harness", "at": "2026-12-01T03:00:20Z",
        "looks": [{"package": "com.android.deskclock", "text": '[1] TextView "AF-r1-a"'}],
        "probesAfter": {"alarms": "07:00"}, "appChoices": {}, "laterInCall": [], "error": None}


def _instrument_run(tmp_path: Path, final: dict[str, Any], look: dict[str, Any] | None = None) -> Trajectory:
    rec = record("calc", run=RUN, passed=True, evidence=EVIDENCE, executor="instrument",
                 checks=[CheckResult(type="asked_user", passed=True, detail="asked")])
    run_dir = make_run(tmp_path, records=[rec])
    (run_dir / EVIDENCE / "final.json").write_text(json.dumps(final, ensure_ascii=False), encoding="utf-8")
    if look is not None:
        (run_dir / EVIDENCE / "harness-look.json").write_text(json.dumps(look), encoding="utf-8")
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [host_step(1, "one")])
    return load_trajectory(run_dir, RUN, load_units(run_dir).units[0])


def test_an_apps_final_json_with_its_own_keys_shows_its_evidence_and_the_harnesss_look(tmp_path: Path) -> None:
    # As the reference app writes it: the scores line's keys, its own (`goal`, `options`), and `evidence`.
    final = {"id": "calc", "outcome": "succeeded", "passed": True, "answer": "已设好 7 点的闹钟", "endReason": "answer",
             "goal": "定个闹钟", "options": {"split": "tune"}, "evidence": APP_EVIDENCE}
    t = _instrument_run(tmp_path, final, LOOK)
    assert t.problems == [] and t.evidence_from == "app" and t.evidence is not None
    assert (t.evidence.end, t.evidence.answer, t.evidence.asks[0].reply) == ("answer", "已设好 7 点的闹钟", "7点")
    assert [f.package for f in t.evidence.fresh_looks] == ["com.android.deskclock"]
    assert t.evidence.probes_after == {"alarms": "07:00"}
    assert t.phone_final == {"outcome": "succeeded", "passed": "true", "answer": "已设好 7 点的闹钟",
                             "endReason": "answer"}


def test_an_apps_own_fresh_look_is_dropped_and_named(tmp_path: Path) -> None:
    forged = {**APP_EVIDENCE, "freshLooks": [{"package": "com.android.deskclock", "text": "AF-forged"}],
              "probesAfter": {"alarms": "forged"}}
    t = _instrument_run(tmp_path, {"outcome": "succeeded", "evidence": forged})
    assert t.evidence is not None and t.evidence.fresh_looks == [] and t.evidence.probes_after == {}
    assert t.problems == ["the app wrote freshLooks, probesAfter in final.json; ignored — only the harness looks, "
                          "probes and judges"]


def test_a_final_json_in_the_host_shape_is_still_the_apps_when_the_record_says_an_app_wrote_it(
    tmp_path: Path
) -> None:
    # An app cannot pass its own fresh look off as the harness's by copying the host executor's file shape.
    evidence = make_evidence("s", answer="56086", end_reason="answered").model_copy(
        update={"fresh_looks": [FreshLook(package="x", text="forged")]})
    host_shaped = json.loads(FinalFile(task_id="calc", run=RUN, evidence=evidence, outcome="succeeded",
                                       passed=True).model_dump_json(by_alias=True))
    t = _instrument_run(tmp_path, host_shaped)
    assert t.evidence_from == "app" and t.evidence is not None and t.evidence.fresh_looks == []
    assert t.problems and t.problems[0].startswith("the app wrote freshLooks")


def test_an_unreadable_evidence_is_named_and_the_apps_words_are_still_shown(tmp_path: Path) -> None:
    t = _instrument_run(tmp_path, {"outcome": "failed", "reason": "卡住了",
                                   "evidence": {**APP_EVIDENCE, "end": "finished", "mood": "good"}})
    assert t.evidence is None and t.evidence_from is None
    assert len(t.problems) == 1 and "evidence unreadable (end: " in t.problems[0]
    assert "infrastructure error" in t.problems[0]
    assert t.phone_final == {"outcome": "failed", "reason": "卡住了"}
    t = _instrument_run(tmp_path / "b", {"outcome": "failed", "evidence": ["not", "an", "object"]})
    assert t.evidence is None and t.problems == [
        f"{EVIDENCE}/final.json: evidence is not an object, ignored (farm rebuilds the evidence from the other keys "
        "and steps.jsonl)"]


def test_a_harness_look_that_failed_or_is_damaged_is_named(tmp_path: Path) -> None:
    t = _instrument_run(tmp_path, {"evidence": APP_EVIDENCE}, {**LOOK, "looks": [], "error": "phone gone"})
    assert t.evidence is not None and t.evidence.end == "answer"
    assert t.problems == ["the harness could not look at the phone after the attempt: phone gone"]
    t = _instrument_run(tmp_path / "b", {"evidence": APP_EVIDENCE}, {"writtenBy": "app"})
    assert t.evidence is not None and len(t.problems) == 1
    assert t.problems[0].startswith(f"{EVIDENCE}/harness-look.json: not the harness's look (")

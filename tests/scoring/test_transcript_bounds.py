"""An attempt's transcript files come from the phone: read within caps, streaming, and every refusal named."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from farm.android.pull_limits import (
    MAX_FINAL_JSON_BYTES,
    MAX_HARNESS_LOOK_BYTES,
    MAX_STEP_LINES,
    read_at_most,
)
from farm.errors import FarmError
from farm.results.device_line import DeviceScore
from farm.results.normalise import Context, score_to_record
from farm.results.record import Record
from farm.scoring.evidence import ScreenRead
from farm.scoring.overrides import EvidenceTexts, OverrideSpec, decide, evidence_texts
from farm.scoring.rescore import NO_TRANSCRIPT, host_rescore
from farm.scoring.transcript import (
    HARNESS_LOOK_FILE,
    read_harness_look,
    read_phone_evidence,
    read_screen_reads,
    read_steps,
)
from farm.scoring.visible import screen_text
from tests.helpers.host import make_task
from tests.helpers.records import score_line

LONG_LINE_BYTES = 5_000_000
"""The hostile step line of the issue: five times the line cap."""
TINY_LINES = 200_000
"""Tiny step lines after it: twenty times the line-count cap."""
READER_PEAK = 3 * 1024 * 1024
"""Most bytes Python may hold at once reading the hostile steps.jsonl when no line has screen text: one line of at
most the 1 MiB cap (and its copy) and 64 KiB skip reads, whatever the file holds (~2 MiB measured; the reader
before the caps peaked at ~57 MiB on this 24 MB file)."""
KEPT_PEAK = 8 * 1024 * 1024
"""The same with screen text on every tiny line: the reader and the 9 999 tiny screen reads it keeps (the line cap
bounds those, not the file; ~5.6 MiB measured, ~149 MiB before the caps)."""

_CTX = Context(run="r", device="S1", executor="instrument")
_SCREEN = '[1] TextView "56088" (result)'


def _tiny(n: int, text: str | None = None) -> str:
    """A tiny step line, valid as the host's own `StepLine` too; without screen text when `text` is empty."""
    return json.dumps({"step": n, "atMs": 0, "observation": {"digest": "d", "text": f"s{n}" if text is None else text},
                       "result": {"ok": True}}) + "\n"


def hostile_steps(path: Path, *, tiny_text: bool = True) -> int:
    """A steps.jsonl: one good step, one 5 MB line, then 200 000 tiny lines (with screen text, or without); returns
    the number of lines. Written in blocks, never built whole."""
    with path.open("w", encoding="utf-8") as out:
        first = {"step": 1, "atMs": 0, "observation": {"digest": "d", "text": _SCREEN, "package": "com.calc"},
                 "result": {"ok": True}}
        out.write(json.dumps(first) + "\n")
        head = json.dumps({"step": 2, "observation": {"text": ""}})[:-3]
        out.write(head + "x" * (LONG_LINE_BYTES - len(head) - 3) + '"}}\n')
        for start in range(0, TINY_LINES, 10_000):
            block = range(start + 3, start + 10_003)
            out.write("".join(_tiny(n, None if tiny_text else "") for n in block))
    return 2 + TINY_LINES


def _record() -> Record:
    line = score_line("calc", checks=[], answer="56088")
    return score_to_record(DeviceScore.model_validate(line), _CTX, "scores.jsonl:1")


def _final(run_dir: Path, **fields: object) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "final.json").write_text(json.dumps({"outcome": "succeeded", "answer": "56088", **fields}), "utf-8")


def _sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that costs no disk and no time (a hole): stat sees its size, a read would see zeros."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        out.truncate(size)


# --- steps.jsonl ----------------------------------------------------------------------------------------------


def test_a_long_line_is_skipped_and_lines_past_the_cap_are_counted_both_named(tmp_path: Path) -> None:
    total = hostile_steps(tmp_path / "steps.jsonl")
    found = read_screen_reads(tmp_path / "steps.jsonl")
    # Line 1 and the tiny lines 3..MAX_STEP_LINES are read; line 2 is skipped; the rest only counted.
    assert len(found.reads) == MAX_STEP_LINES - 1
    assert found.reads[0] == ScreenRead(step=1, text=_SCREEN, package="com.calc")
    assert found.reads[-1].step == MAX_STEP_LINES and found.reads[-1].text == f"s{MAX_STEP_LINES}"
    assert found.unread == [
        f"steps.jsonl: 1 line(s) longer than 1 MiB not read (the longest {LONG_LINE_BYTES:,} bytes)",
        f"steps.jsonl: {total - MAX_STEP_LINES:,} line(s) past the first {MAX_STEP_LINES:,} not read",
    ]


def test_reading_a_hostile_steps_file_keeps_memory_flat(tmp_path: Path) -> None:
    hostile_steps(tmp_path / "steps.jsonl", tiny_text=False)
    with_text = tmp_path / "t" / "steps.jsonl"
    with_text.parent.mkdir()
    hostile_steps(with_text)
    peaks = []
    for path in (tmp_path / "steps.jsonl", with_text):
        tracemalloc.start()
        try:
            found = read_screen_reads(path)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert found.unread  # the caps did refuse lines
    assert peaks[0] < READER_PEAK and peaks[1] < KEPT_PEAK, peaks


def test_the_host_scores_what_was_read_and_names_what_was_not(tmp_path: Path) -> None:
    run_dir = tmp_path / "calc" / "run"
    _final(run_dir)
    hostile_steps(run_dir / "steps.jsonl")
    phone = read_phone_evidence(run_dir)
    assert phone.evidence.screen_reads[0].text == _SCREEN and len(phone.unread) == 2
    out = host_rescore(_record(), make_task(id="calc", checks=[{"type": "answer_regex", "pattern": "56088"}]),
                       run_dir)
    assert (out.outcome, out.passed) == ("succeeded", True)
    assert out.reasons[-2:] == list(phone.unread)


def test_strict_step_parsing_refuses_a_transcript_with_a_skipped_line(tmp_path: Path) -> None:
    hostile_steps(tmp_path / "steps.jsonl")
    with pytest.raises(FarmError, match=r"1 line\(s\) longer than 1 MiB not read .*past the first 10,000 not read"):
        read_steps(tmp_path / "steps.jsonl")


# --- final.json and harness-look.json -------------------------------------------------------------------------


def test_a_final_json_over_the_cap_is_not_read_and_the_attempt_says_so(tmp_path: Path) -> None:
    run_dir = tmp_path / "calc" / "run"
    _sparse(run_dir / "final.json", MAX_FINAL_JSON_BYTES + 1)
    tracemalloc.start()
    try:
        with pytest.raises(FarmError, match="final.json larger than 8 MiB: not read"):
            read_phone_evidence(run_dir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024  # refused from its size: never read
    out = host_rescore(_record(), make_task(id="calc", checks=[{"type": "answer_grounded"}]), run_dir)
    assert (out.outcome, out.passed, out.failure_kind) == ("error", False, "infrastructure")
    assert out.reasons == [f"{NO_TRANSCRIPT}: {run_dir}: final.json larger than 8 MiB: not read"]


def test_a_final_json_at_the_cap_is_read(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _final(run_dir)
    text = (run_dir / "final.json").read_text(encoding="utf-8")
    (run_dir / "final.json").write_text(text + " " * (MAX_FINAL_JSON_BYTES - len(text)), encoding="utf-8")
    assert read_phone_evidence(run_dir).evidence.answer == "56088"


def test_a_file_growing_past_the_cap_after_its_size_was_seen_is_refused() -> None:
    # /dev/zero says it is empty and never ends: only the read of cap + 1 bytes stops it.
    assert read_at_most(Path("/dev/zero"), 1024) is None


def test_a_harness_look_over_the_cap_is_not_read(tmp_path: Path) -> None:
    _sparse(tmp_path / HARNESS_LOOK_FILE, MAX_HARNESS_LOOK_BYTES + 1)
    with pytest.raises(FarmError, match="harness-look.json: larger than 8 MiB: not read"):
        read_harness_look(tmp_path)


def test_an_override_not_found_names_the_final_json_it_could_not_read(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _sparse(run_dir / "final.json", MAX_FINAL_JSON_BYTES + 1)
    (run_dir / "steps.jsonl").write_text(_tiny(1), encoding="utf-8")
    texts = evidence_texts(run_dir, "56088")
    assert isinstance(texts, EvidenceTexts) and texts.unread == ["final.json larger than 8 MiB: not read"]
    assert list(texts) == ["56088", "s1"]
    spec = OverrideSpec.model_validate({"id": "calc", "from": "fail", "to": "pass", "evidence": "settled"})
    assert decide(spec, "S1", False, texts).note == (
        "refused: evidence is not screen text or the final answer of this task's run record "
        "(not searched: final.json larger than 8 MiB: not read)")
    assert decide(spec.model_copy(update={"evidence": "s1"}), "S1", False, texts).applied


# --- normal transcripts read as before ------------------------------------------------------------------------


def _old_screen_reads(path: Path) -> list[ScreenRead]:
    """The reader before the caps (whole file, `splitlines`), as the reference for ordinary transcripts."""
    reads: list[ScreenRead] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        obs = item.get("observation")
        text = obs.get("text") if isinstance(obs, dict) else obs if isinstance(obs, str) else item.get("screen")
        if isinstance(text, str) and text:
            step = item.get("step")
            package = obs.get("package", "") if isinstance(obs, dict) else ""
            reads.append(ScreenRead(step=step if isinstance(step, int) else n, text=text,
                                    package=package if isinstance(package, str) else ""))
    return reads


def test_ordinary_transcripts_read_exactly_as_before(tmp_path: Path) -> None:
    lines = [
        json.dumps({"step": 1, "atMs": 5, "observation": {"digest": "x", "text": _SCREEN, "package": "com.calc"},
                    "result": {"ok": True}}),
        "",
        json.dumps({"observation": "a screen as a string"}),  # no step: its line number stands in
        json.dumps({"screen": "另一个屏幕 ünïcödé", "step": 7}, ensure_ascii=False),
        json.dumps({"step": 8, "observation": {"digest": "ab", "chars": 900}}),  # no text: skipped
        "not json",
        "[1, 2]",
        json.dumps({"step": 9, "observation": {"text": "x" * 100_000}}) + "\r",  # a CRLF line, long but in the cap
        json.dumps({"step": 10, "observation": {"text": "last, no newline"}}),
    ]
    path = tmp_path / "steps.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8"))
    found = read_screen_reads(path)
    assert found.reads == _old_screen_reads(path) and found.unread == []
    assert [r.step for r in found.reads] == [1, 3, 7, 9, 10]
    _final(tmp_path)
    assert read_phone_evidence(tmp_path).unread == ()
    assert read_screen_reads(tmp_path / "missing.jsonl").reads == []
    texts = evidence_texts(tmp_path, None)
    assert texts == [screen_text(r.text) for r in found.reads] and not isinstance(texts, EvidenceTexts)


def test_a_sparse_final_json_size_is_what_stat_says(tmp_path: Path) -> None:
    # The builder itself: the hole costs nothing on disk, yet the file is over the cap.
    _sparse(tmp_path / "final.json", MAX_FINAL_JSON_BYTES + 1)
    assert os.stat(tmp_path / "final.json").st_size == MAX_FINAL_JSON_BYTES + 1

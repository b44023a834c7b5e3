"""After an on-device agent's run the harness looks at the phone itself, as the host executor does after each task.

The agent app's transcript says what it did; whether a write task's data is really there is for the harness to
see (DESIGN, "Scoring"). Once `am instrument` has ended and the phone's tree is pulled, this module reopens the
apps each finished task's screen_has checks name and runs its probe_has probes — `host_agent.verify`, through
uiautomator2 on the job's own adb device — and writes what it saw into the pulled tree as
`<id>/run/harness-look.json` (`farm.scoring.transcript.HarnessLook`), which re-scoring merges in.

With several tasks in one call (`--batch`) every look comes after the whole call: a later task of the call may
have changed what an earlier one left, and the file names those tasks (`later_in_call`). The look is still the
harness's own.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from farm.errors import FarmError
from farm.fsutil import atomic_write_text
from farm.manifest import utc_now
from farm.scoring.transcript import HARNESS_LOOK_FILE, HarnessLook, needs_look, read_phone_evidence

if TYPE_CHECKING:
    from farm.android.executor import PhoneJob, ProgressSink, ResolvedTask
    from farm.scoring.evidence import Evidence
    from host_agent.phone import Phone


def remove_app_looks(raw: Path) -> set[str]:
    """Delete every `<id>/run/harness-look.json` the pulled tree brought from the phone; the task ids.

    Only farm writes that file, after the pull: one already there is the app's, and must never be read as the
    harness's (nor left for a later reader to mistake).
    """
    found: set[str] = set()
    for path in raw.glob(f"*/run/{HARNESS_LOOK_FILE}"):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
        found.add(path.parent.parent.name)
    return found


def _wanted(job: PhoneJob, finished: Sequence[str]) -> list[tuple[ResolvedTask, Evidence]]:
    """Finished tasks whose checks need a look, with the evidence their pulled transcript gives (the packages the
    agent used say where an `{app:…}` look goes). No transcript or an infrastructure end: nothing to look for."""
    done = set(finished)
    out = []
    for rt in job.tasks:
        if rt.id not in done or not needs_look(rt.task):
            continue
        try:
            evidence = read_phone_evidence(job.raw_dir / rt.id / "run").evidence
        except FarmError:
            continue
        if evidence.end != "error":
            out.append((rt, evidence))
    return out


def take_looks(job: PhoneJob, finished: Sequence[str], progress: ProgressSink) -> list[str]:
    """Look after the tasks of a finished `am instrument` call (in the order they ended) and write each look into
    the pulled tree; return the ids looked after (each has its `harness-look.json`, possibly saying why the look
    failed). Never raises for phone trouble: a look that failed is written as such (an infrastructure error)."""
    forged = remove_app_looks(job.raw_dir)
    if forged:
        progress.note(f"the app wrote {HARNESS_LOOK_FILE} for {len(forged)} task(s); removed")
    wanted = _wanted(job, finished)
    if not wanted:
        return []
    if job.stop is not None and job.stop.is_set():
        # The user asked to stop: no new work on the phone. These attempts stay unscored (infrastructure).
        return []
    phone, installed, why = _connect(job)
    looked: list[str] = []
    try:
        for rt, evidence in wanted:
            later = list(finished[finished.index(rt.id) + 1:]) if rt.id in finished else []
            look = _look(rt, evidence, phone, installed, why)
            look = look.model_copy(update={"state_before": job.state_before.get(rt.id, {})})
            look = look.model_copy(update={"later_in_call": later, "app_file_replaced": rt.id in forged})
            run_dir = job.raw_dir / rt.id / "run"
            atomic_write_text(run_dir / HARNESS_LOOK_FILE, look.model_dump_json(by_alias=True, indent=1) + "\n")
            looked.append(rt.id)
    finally:
        if phone is not None:
            _release(phone)
    return looked


def _connect(job: PhoneJob) -> tuple[Phone | None, list[str], str | None]:
    """uiautomator2 on the job's adb device (the right adb server), and its installed packages."""
    from host_agent.phone import Phone

    try:
        phone = Phone.connect(job.device)
    except Exception as exc:  # noqa: BLE001 - PhoneError, or whatever uiautomator2 raises starting its server
        return None, [], f"uiautomator2: {' '.join(str(exc).split())[:300]}"
    try:
        installed = [str(p) for p in job.device.list_packages()]
    except Exception:  # noqa: BLE001 - without the list a missing app's look fails on its own
        installed = []
    return phone, installed, None


def _look(rt: ResolvedTask, evidence: Evidence, phone: Phone | None, installed: list[str],
          why: str | None) -> HarnessLook:
    """One task's look: `host_agent.verify`'s fresh looks and after-probes, or why they could not be made."""
    from host_agent.phone import PhoneError
    from host_agent.verify import verify

    at = utc_now()
    if phone is None:
        return HarnessLook(at=at, error=why or "no phone")
    try:
        seen = verify(rt.task, evidence, phone, installed=installed, alternatives=rt.alternatives)
    except PhoneError as exc:
        return HarnessLook(at=at, error=" ".join(str(exc).split())[:300])
    return HarnessLook(at=at, looks=seen.fresh_looks, probes_after=seen.probes_after, app_choices=seen.app_choices,
                       state_after=seen.state_after)


def _release(phone: Phone) -> None:
    """Leave the phone on its home screen (the look opened apps the next attempt must not start in), then end the
    uiautomator2 server and the call worker: the agent app's next instrumentation registers its own UiAutomation,
    which fails while another one (uiautomator2's) is registered."""
    from host_agent.phone import PhoneError

    try:
        phone.press("home")
    except PhoneError:
        pass
    stop = getattr(phone.u2, "stop_uiautomator", None)
    if callable(stop):
        try:
            stop(wait=False)
        except Exception:  # noqa: BLE001 - best effort on a phone that may be gone
            pass
    phone.close()

"""`farm pull`: collect an `eval/<run>/` tree from a phone for a run started elsewhere.

A pull keeps what it can. What it refuses — tree entries (`farm.android.pull`), scores lines past a cap and an
oversized bundle (`farm.android.pull_limits`) — is listed in `PullSummary.refused` (`farm pull` prints each on
stderr) and in the run's notes (`manifest.notes`, which the report shows). Refusals alone do not change the exit
status: the records that arrived are scored and the command exits as for any pull (0, or 2 for a corrupt scores
line). A partial pull is not EXIT_UNFINISHED: that status means units left unfinished by lost phones, and a pull
runs no unit; what it could not take is in the notes, with the counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adbutils import AdbDevice, AdbError
from pydantic import ValidationError
from pydantic_core import from_json

from farm import manifest as mf
from farm.android import devices, health
from farm.android.agent_contract import BundleTask
from farm.android.bundle import bundle_device_path
from farm.android.phone_records import summary_source, with_evidence
from farm.android.prepare import PhoneFacts, Resolver, installed_packages, prepare, signed_in
from farm.android.pull import pull_tree
from farm.android.pull_limits import PullCaps, caps_of, read_scores
from farm.android.sync_stream import FileTooLarge, SyncStalled, read_file, remote_mode
from farm.config import DEFAULT_STALL_S, FarmConfig, InstrumentProfile
from farm.errors import FarmError
from farm.names import check_name
from farm.phone_name import phone_name
from farm.results.normalise import Context
from farm.results.record import Execution
from farm.results.store import RECORDS_FILE, RunStore, pulled_dir
from farm.scoring.rescore import rescore_records
from farm.taskset.loader import load_taskset
from farm.taskset.model import Task
from farm.taskset.probes import load_catalogue


@dataclass
class PullSummary:
    """What `farm pull` did."""

    run_dir: Path
    raw: Path
    records: int
    problems: list[str]
    refused: list[str]
    """Every refused tree entry (`'<device path>': why`), then one line per cap that refused scores lines."""
    already: int = 0
    """Records left out because the run already had them (same unit and attempt)."""
    tasks_from: str = ""
    """Where the task definitions the host scored against came from (the phone's bundle, or none)."""


def pull_run(
    cfg: FarmConfig, *, serial: str, run: str, split: str, runs_dir: Path, profile: str | None,
    command: list[str] | None = None,
) -> PullSummary:
    """Pull the phone's `eval/<run>/` into the run's `pulled_dir`, joining (or creating) the run, and normalise it."""
    if split not in ("tune", "holdout", "all"):
        raise FarmError(f"--split {split}: invalid split", hint="use tune, holdout or all")
    check_name(run, "--run")
    profile_name, prof = cfg.profile(profile)
    phone = devices.select(devices.discover(cfg), [serial], False)[0]
    if phone.state != "device":
        raise FarmError(f"{serial}: adb state is {phone.state}", hint="reconnect the phone")
    run_dir = runs_dir / run
    raw = pulled_dir(run_dir, serial, split)
    device = phone.device()
    remote = prof.eval_dir(run)

    try:
        # Within farm.yaml's stall_s: adbutils' own sync calls wait for a silent phone without a limit.
        if not remote_mode(device, remote, stall_s=cfg.stall_s):
            raise FarmError(f"{serial}: {remote}: no such run on the phone", hint="check --run and --profile")
    except SyncStalled as exc:
        raise FarmError(f"{serial}: link stalled: {exc}",
                        hint="reconnect the phone (or raise stall_s in farm.yaml for a slow link)") from None
    except (AdbError, OSError) as exc:
        raise FarmError(f"{serial}: cannot reach the phone ({exc})") from None
    entry = mf.PhoneEntry(
        serial=serial, adb_server=phone.server.address(),
        model=devices.shell(device, ["getprop", "ro.product.model"]).strip() or None,
        android=devices.shell(device, ["getprop", "ro.build.version.release"]).strip() or None,
        agent_version=health.version_name(device, prof.package),
    )
    entry.name = phone_name(serial, entry.model, cfg.phone_labels)
    # A run made here says it was pulled, and is over (it ran elsewhere): never shown as still running. A run
    # `farm run` made keeps its own lane settings and status.
    now = mf.utc_now()
    store, _created = RunStore.join(runs_dir, run, mf.LaneEntry(lane="android"), new=lambda: mf.Manifest(
        run_id=run, created_at=now, finished_at=now, status="finished", command=command or [],
        code=mf.code_fingerprint(),
        config=mf.redact(cfg.model_dump(mode="json")),
        lanes=[mf.LaneEntry(lane="android", detail={"split": split, "profile": profile_name, "pulled": True})]))
    store.update(lambda m: m.phones.extend([entry] if all(p.serial != serial for p in m.phones) else []))
    # A tree already pulled is never overwritten: pulling again only adds what the run does not have.
    caps = caps_of(cfg.pull)
    pulled = None if raw.exists() else pull_tree(device, remote, raw, cfg.pull, caps=caps, stall_s=cfg.stall_s)
    refused = pulled.refused if pulled is not None else []
    tasks: dict[str, Task]
    if pulled is not None and pulled.stalled is not None:
        # The phone stopped answering: nothing more is asked of it (every question would wait the window again).
        tasks, tasks_from = {}, f"no task definitions (the link stalled: {pulled.stalled})"
    else:
        tasks, tasks_from = bundle_tasks(device, prof.resolved_files_dir(), run, caps, refused, stall_s=cfg.stall_s)
        if not tasks:
            tasks, tasks_from = local_tasks(cfg, device, serial, prof, run)
    execution: Execution = "simulated" if profile_name == "sim" else "live"
    ctx = Context(run=run, device=serial, split=split, executor="instrument", execution=execution)
    scores = read_scores(raw / "scores.jsonl", ctx, "scores.jsonl", caps)
    normalised = scores.normalised
    refused += scores.notes
    scored = rescore_records(normalised.records, tasks, raw, why_unknown=f"not in {tasks_from}")
    fresh, already = store.append_new(with_evidence(scored, raw, run_dir))
    source = summary_source(raw, run_dir, serial)
    store.add_lane(mf.LaneEntry(
        lane="android", outputs=[RECORDS_FILE, str(raw.relative_to(run_dir))],
        override_sources=[source] if source is not None else [],
    ))
    if refused:
        store.update(lambda m: _note_refused(m, serial, refused))
    return PullSummary(run_dir, raw, fresh, normalised.problems, refused, already, tasks_from)


NOTES_MAX = 50
"""Refusals of one pull written to the run's notes one by one; past this, one line counts the rest (all of them are
on `farm pull`'s stderr)."""


def _note_refused(manifest: mf.Manifest, serial: str, refused: list[str]) -> None:
    """Add the pull's refusals to the run's notes (`<serial>: pull refused …`), each once however often it is
    pulled, the first NOTES_MAX one by one."""
    lines = [f"{serial}: pull refused {entry}" for entry in refused[:NOTES_MAX]]
    if len(refused) > NOTES_MAX:
        lines.append(f"{serial}: pull refused {len(refused) - NOTES_MAX} more entries (listed by farm pull)")
    manifest.notes += [line for line in dict.fromkeys(lines) if line not in manifest.notes]


def bundle_tasks(
    device: AdbDevice, files_dir: str, run: str, caps: PullCaps | None = None, refused: list[str] | None = None,
    *, stall_s: float = DEFAULT_STALL_S,
) -> tuple[dict[str, Task], str]:
    """The resolved tasks the phone ran (the bundle `farm run` pushed), by id, and where they came from.

    Without them the host has nothing to score against: every line then becomes an error record
    saying the task was not planned, never the phone's own verdict. The bundle is read within
    `caps.max_bundle_bytes` and parsed by pydantic's depth-limited parser; one past the cap is
    refused (added to `refused`). A link silent for `stall_s` gives up the bundle (SyncStalled is an OSError).
    """
    path = bundle_device_path(files_dir, run)
    most = (caps or PullCaps()).max_bundle_bytes
    try:
        data = from_json(read_file(device, path, most, stall_s=stall_s))
    except FileTooLarge as exc:
        if refused is not None:
            refused.append(f"{path!r}: {exc} (max_bundle_bytes)")
        return {}, f"no bundle at {path} (refused: {exc})"
    except (AdbError, OSError, ValueError):
        return {}, f"no bundle at {path}"
    tasks: dict[str, Task] = {}
    for obj in data.get("tasks", []) if isinstance(data, dict) else []:
        if not isinstance(obj, dict):
            continue
        try:
            # The bundle's own model: its markers are already filled, so a task file's rule (`{run}` in the
            # marker) would drop every task that has one.
            task: Task = BundleTask.model_validate({"directory": "", **obj})
        except ValidationError:
            continue
        tasks[task.id] = task
    return tasks, f"the phone's bundle {path}"


def local_tasks(
    cfg: FarmConfig, device: AdbDevice, serial: str, prof: InstrumentProfile, run: str
) -> tuple[dict[str, Task], str]:
    """The local task set resolved on the phone now (a run started without `farm run` has no bundle).

    Probe values are read at pull time, not before the run: the source says so in the summary.
    """
    root = Path(cfg.tasks_dir)
    if not root.is_dir():
        return {}, f"no bundle and no task set at {root}"
    facts = PhoneFacts(installed_packages(device), signed_in(device, serial, cfg, prof))
    resolver = Resolver(device, facts, load_catalogue(None), run=run, allow_irreversible=True)
    prepared = prepare(resolver, load_taskset(root))
    return {t.id: t.task for t in prepared.tasks}, f"the task set {root} (resolved at pull time)"

"""The pinned WebVoyager data: where every file comes from, its SHA-256, the 126-task set, and selection.

The data files are never part of the project: `farm webvoyager data --fetch` downloads them from the pinned
upstream commits (`data_files.py`) and everything here refuses a file whose SHA-256 is not the pinned one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from farm.errors import FarmError
from web_bench.webvoyager.model import SITES, Site, WvTask

DATA_HINT = "run `farm webvoyager data --fetch` (or `farm webvoyager data --from DIR` with verified copies)"
"""The fix named by every refusal of a missing or altered data file."""

_OPENCODE = ("oktton/opencode-browser", "856867996e73f7dcc5e39827bf2af7555bd63d40")
_WEBVOYAGER = ("MinorJerry/WebVoyager", "5a7896738c10bfb8b9edccce6bb0e0411f8ae569")


class DataFile(BaseModel):
    """One pinned upstream file and where it lives in a data directory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """File name in the data directory (and the last URL segment a `--fetch` base URL serves)."""
    aliases: tuple[str, ...] = ()
    """Other accepted names of the same bytes (how a local copy may be named, e.g. `WebVoyager_data.549.json`)."""
    repo: str
    """Upstream GitHub repository, `owner/name`."""
    commit: str
    """Pinned upstream commit (40 hex digits)."""
    path: str
    """Path of the file in the upstream repository."""
    sha256: str
    """SHA-256 of the file's bytes; any other content is refused."""
    size: int
    """Length in bytes (a download longer than this is cut off and refused)."""
    what: str
    """What the file is, for messages."""

    @property
    def url(self) -> str:
        """The raw file at the pinned commit."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"

    @property
    def candidates(self) -> tuple[str, ...]:
        """Names looked for in a directory, the data-directory name first."""
        return (self.name, *self.aliases)


TASKS_FILE = "WebVoyager_data.json"
PROMPT_FILE = "judge-prompt.md"

DATA_FILES: tuple[DataFile, ...] = (
    DataFile(
        name=TASKS_FILE, aliases=("WebVoyager_data.549.json",), repo=_OPENCODE[0], commit=_OPENCODE[1],
        path="assets/benchmark/WebVoyager_data.json", size=124581,
        sha256="e0154f3d0f5c1945fcac92391c28e534e30d9859fb212aba88a2dcdc5167d720",
        what="the 549-task reference set (task_id, confirmed_task, website)",
    ),
    DataFile(
        name=PROMPT_FILE, repo=_OPENCODE[0], commit=_OPENCODE[1], path="assets/benchmark/judge-prompt.md",
        size=2321, sha256="bcdf403484823037eaeb6cec7918b966fe90ee31a30bc8d69094d2ff42747ccf",
        what="the reference judge prompt (used verbatim)",
    ),
    DataFile(
        name="WebVoyager_data.jsonl", repo=_WEBVOYAGER[0], commit=_WEBVOYAGER[1], path="data/WebVoyager_data.jsonl",
        size=140890, sha256="69b19fd86c23f1a500244a3724e039aa7ca6a1223d03e11eb10e308d4f11c488",
        what="the 643 upstream WebVoyager tasks",
    ),
    DataFile(
        name="reference_answer.json", repo=_WEBVOYAGER[0], commit=_WEBVOYAGER[1], path="data/reference_answer.json",
        size=103047, sha256="5473818408d8a19960c4f820c1e5721d218b87b547499d7281c2a0fc4267b0c4",
        what="the upstream reference answers",
    ),
    DataFile(
        name="LICENSE", aliases=("LICENSE-WebVoyager-Apache-2.0.txt",), repo=_WEBVOYAGER[0], commit=_WEBVOYAGER[1],
        path="LICENSE", size=11358, sha256="cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
        what="the WebVoyager licence (Apache-2.0)",
    ),
)
"""Every file `farm webvoyager data` places, in download order."""

SET_126_IDS: tuple[str, ...] = (
    "Allrecipes--0", "Allrecipes--1", "Allrecipes--2", "Allrecipes--3", "Allrecipes--4", "Allrecipes--5",
    "Allrecipes--6", "Allrecipes--7", "Allrecipes--8", "Allrecipes--9", "Allrecipes--10", "Allrecipes--11",
    "Allrecipes--12", "Allrecipes--13", "Allrecipes--14", "Allrecipes--15", "Allrecipes--16", "Allrecipes--17",
    "Allrecipes--18", "Allrecipes--19", "Allrecipes--20", "Allrecipes--21", "Allrecipes--22", "Allrecipes--23",
    "Allrecipes--24", "Allrecipes--25", "Allrecipes--26", "Allrecipes--27", "Allrecipes--28", "Allrecipes--29",
    "Allrecipes--30", "Allrecipes--31", "Allrecipes--32", "Allrecipes--33", "Allrecipes--34", "Allrecipes--35",
    "Allrecipes--36", "Allrecipes--37", "Allrecipes--38", "Allrecipes--39", "Allrecipes--40", "Allrecipes--41",
    "Allrecipes--42", "Allrecipes--43", "Allrecipes--44",
    "Amazon--0", "Amazon--1", "Amazon--2", "Amazon--3", "Amazon--4", "Amazon--5", "Amazon--6", "Amazon--7",
    "Amazon--8", "Amazon--9", "Amazon--10", "Amazon--11", "Amazon--12", "Amazon--13", "Amazon--14", "Amazon--15",
    "Amazon--16", "Amazon--17", "Amazon--18", "Amazon--19", "Amazon--20", "Amazon--21", "Amazon--22", "Amazon--23",
    "Amazon--24", "Amazon--25", "Amazon--26", "Amazon--27", "Amazon--28", "Amazon--29", "Amazon--31", "Amazon--32",
    "Amazon--33", "Amazon--34", "Amazon--35", "Amazon--36", "Amazon--37", "Amazon--38", "Amazon--40",
    "Apple--0", "Apple--1", "Apple--2", "Apple--3", "Apple--4", "Apple--5", "Apple--6", "Apple--7", "Apple--8",
    "Apple--10", "Apple--11", "Apple--12", "Apple--13", "Apple--14", "Apple--15", "Apple--16", "Apple--17",
    "Apple--18", "Apple--19", "Apple--20", "Apple--21", "Apple--22", "Apple--23", "Apple--24", "Apple--25",
    "Apple--26", "Apple--27", "Apple--28", "Apple--29", "Apple--30", "Apple--31", "Apple--32", "Apple--33",
    "Apple--34", "Apple--35", "Apple--36", "Apple--37", "Apple--38", "Apple--39", "Apple--40", "Apple--41",
    "Apple--42",
)
"""The 126-task set: every Allrecipes (45), Amazon (39) and Apple (42) task of the 549-task file, in file order."""

SET_126_SHA256 = "9d6172c79b8fe4c05ad5efac5ffc01bb574d1f7ef6a454bd29766f59a75e8394"
"""SHA-256 of `canonical_json` of the 126 tasks in file order: a changed task text, URL or order is refused."""

_SITE_BY_NAME: dict[str, Site] = {site: site for site in SITES}


def data_file(name: str) -> DataFile:
    """The pinned file called `name` (its data-directory name)."""
    for entry in DATA_FILES:
        if entry.name == name:
            return entry
    raise KeyError(name)


def data_file_hashes() -> dict[str, str]:
    """Pinned SHA-256 of every data file, by data-directory name (what a verified run was made with)."""
    return {entry.name: entry.sha256 for entry in DATA_FILES}


def locate(directory: Path, entry: DataFile) -> Path | None:
    """The first of the file's accepted names present in `directory`, or None."""
    for name in entry.candidates:
        path = directory / name
        if path.is_file():
            return path
    return None


def sha256_bytes(raw: bytes) -> str:
    """Hex SHA-256 of `raw`."""
    return hashlib.sha256(raw).hexdigest()


def canonical_json(value: WvTask | Sequence[WvTask]) -> bytes:
    """The one canonical byte form behind `task_sha256` and `SET_126_SHA256`.

    A task is the JSON object of its three data-file fields `confirmed_task`, `task_id`, `website` (`site` is
    left out: it is derived from the id); a list of tasks is a JSON array of those objects in the given order.
    Keys sorted, no whitespace (separators `,` and `:`), non-ASCII characters kept as themselves
    (`ensure_ascii=False`), encoded as UTF-8 with no trailing newline (the form `store.canonical_json` uses too).
    """
    body: dict[str, str] | list[dict[str, str]]
    body = _fields(value) if isinstance(value, WvTask) else [_fields(task) for task in value]
    return json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _fields(task: WvTask) -> dict[str, str]:
    return {"task_id": task.task_id, "confirmed_task": task.confirmed_task, "website": task.website}


def task_sha256(task: WvTask) -> str:
    """SHA-256 of one task's canonical JSON (recorded per task in the run manifest)."""
    return sha256_bytes(canonical_json(task))


def tasks_sha256(tasks: Sequence[WvTask]) -> str:
    """SHA-256 of the canonical JSON array of `tasks`, in their order."""
    return sha256_bytes(canonical_json(tasks))


def load_tasks(data_dir: Path) -> list[WvTask]:
    """The 126 tasks from `data_dir`, after checking the file's SHA-256, the ids and the set's SHA-256."""
    entry = data_file(TASKS_FILE)
    path = locate(data_dir, entry)
    if path is None:
        raise FarmError(f"{data_dir / TASKS_FILE}: missing ({entry.what})", hint=DATA_HINT)
    return tasks_from_reference_file(read_verified(path, entry), path)


def read_verified(path: Path, entry: DataFile) -> bytes:
    """The bytes of `path`, refused (FarmError naming both hashes) unless their SHA-256 is `entry`'s pin."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FarmError(f"{path}: cannot read ({exc.strerror})", hint=DATA_HINT) from None
    got = sha256_bytes(raw)
    if got != entry.sha256:
        raise FarmError(f"{path}: SHA-256 {got} is not the pinned {entry.sha256} ({entry.what})", hint=DATA_HINT)
    return raw


def tasks_from_reference_file(raw: bytes, path: Path) -> list[WvTask]:
    """The 126-task set out of the bytes of a 549-task file, refused unless its ids and canonical SHA-256 are
    the pinned ones (a second lock behind the file hash: it names what changed)."""
    try:
        items = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FarmError(f"{path}: not JSON ({exc})", hint=DATA_HINT) from None
    if not isinstance(items, list):
        raise FarmError(f"{path}: expected a JSON array of tasks", hint=DATA_HINT)
    tasks: list[WvTask] = []
    for index, item in enumerate(items):
        task = _task(item, index, path)
        if task is not None:
            tasks.append(task)
    ids = tuple(task.task_id for task in tasks)
    if ids != SET_126_IDS:
        missing = [task_id for task_id in SET_126_IDS if task_id not in ids]
        extra = [task_id for task_id in ids if task_id not in SET_126_IDS]
        raise FarmError(
            f"{path}: the Allrecipes/Amazon/Apple ids are not the pinned 126 "
            f"(missing {missing[:3]}, unexpected {extra[:3]}, {len(ids)} found)", hint=DATA_HINT,
        )
    got = tasks_sha256(tasks)
    if got != SET_126_SHA256:
        raise FarmError(f"{path}: the 126 tasks' SHA-256 {got} is not the pinned {SET_126_SHA256}", hint=DATA_HINT)
    return tasks


def _task(item: object, index: int, path: Path) -> WvTask | None:
    """The task at `index` when it belongs to one of the three sites, else None."""
    if not isinstance(item, dict) or set(item) != {"task_id", "confirmed_task", "website"}:
        raise FarmError(f"{path}: task #{index} is not a {{task_id, confirmed_task, website}} object", hint=DATA_HINT)
    task_id = item["task_id"]
    site = _SITE_BY_NAME.get(task_id.split("--", 1)[0]) if isinstance(task_id, str) else None
    if site is None:
        return None
    try:
        return WvTask(task_id=task_id, confirmed_task=item["confirmed_task"], website=item["website"], site=site)
    except ValidationError as exc:
        raise FarmError(f"{path}: task {task_id}: {exc.errors()[0]['msg']}", hint=DATA_HINT) from None


def select(tasks: Sequence[WvTask], ids: list[str] | None = None, count: int | None = None) -> list[WvTask]:
    """The tasks a run covers: `ids` (kept in data order), the first `count`, or all of them."""
    if ids is not None and count is not None:
        raise FarmError("--ids and --count given together", hint="pass one of them")
    if count is not None:
        if isinstance(count, bool) or not 1 <= count <= len(tasks):
            raise FarmError(f"--count {count}: out of range", hint=f"pass a number from 1 to {len(tasks)}")
        return list(tasks[:count])
    if ids is None:
        return list(tasks)
    if not ids:
        raise FarmError("--ids is empty", hint="pass task ids such as Allrecipes--0,Apple--0")
    seen: set[str] = set()
    for task_id in ids:
        if task_id in seen:
            raise FarmError(f"--ids: {task_id} is given twice", hint="list each task once")
        seen.add(task_id)
    known = {task.task_id for task in tasks}
    unknown = [task_id for task_id in ids if task_id not in known]
    if unknown:
        what = f"{unknown[0]} is" if len(unknown) == 1 else f"{', '.join(unknown)} are"
        raise FarmError(f"--ids: {what} not in the {len(tasks)}-task set",
                        hint="use ids of the Allrecipes, Amazon and Apple tasks, e.g. Allrecipes--0")
    return [task for task in tasks if task.task_id in seen]

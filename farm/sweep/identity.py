"""What must not change between a sweep and its resume: the code, the tasks, the configuration, the options.

A resumed sweep continues the same measurement. Were any of these different, finished units and
new ones would measure different things under one run id, so resume is refused (one line, exit
2) and `--retry-from OLD --run NEW` is the way to reuse what is still valid.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from pydantic import JsonValue

from farm.manifest import CodeFingerprint


@dataclass(frozen=True)
class SweepIdentity:
    """The four things a resume compares, each as a short stable string."""

    code: str
    """Commit and hash of the uncommitted diff."""
    tasks: str
    """SHA-256 over the selected task ids and their file hashes."""
    config: str
    """SHA-256 of farm.yaml as used (credentials removed)."""
    options: str
    """SHA-256 of the sweep's options as canonical JSON (spread, repeats, executor, agent options…): a hash,
    since an option may hold a credential (a `--base-url` with user-info)."""

    def meta(self) -> dict[str, str]:
        """Journal `meta` rows."""
        return {"code": self.code, "tasks": self.tasks, "config": self.config, "options": self.options}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sweep_identity(
    code: CodeFingerprint, tasks: list[tuple[str, str]], config: JsonValue, options: JsonValue
) -> SweepIdentity:
    """Identity of a sweep from its code fingerprint, (task id, file sha256) pairs, redacted config and options."""
    return SweepIdentity(
        code=f"{code.git_commit or 'no-git'}+{code.diff_sha256 or 'clean'}",
        tasks=_sha(json.dumps(sorted(tasks))),
        config=_sha(json.dumps(config, sort_keys=True, ensure_ascii=False)),
        options=_sha(json.dumps(options, sort_keys=True, ensure_ascii=False)),
    )

"""How the phone presents a file's owner, group, mode and size to `ls -l` and `stat` (toybox on Android 14).

The host file system under the phone's root knows nothing of Android's users, so this is where the phone's own
view is made, for one device path and its host `lstat`:

- shared storage (`/sdcard`, through Android 11+'s FUSE daemon): files `-rw-rw----`, directories `drwxrws---`,
  owner the MediaProvider's uid, group `media_rw`, directories 3452 bytes (what FUSE reports for a 4 KiB
  directory); an app's own `Android/data/<pkg>` tree belongs to that app, group `ext_data_rw`, directories
  `drwxrws--x`;
- elsewhere: the host's mode bits, regular files owned by `shell` (what `adb push` and the shell create),
  everything else by `root`.
"""

from __future__ import annotations

import os
import stat as statmod
from dataclasses import dataclass
from typing import TYPE_CHECKING

from farm.sim.rootfs import STORAGE

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

MEDIA_PROVIDER_UID = 10207
"""The uid of `com.android.providers.media.module`, which creates every file of shared storage under FUSE."""
_GIDS = {"root": 0, "system": 1000, "shell": 2000, "media_rw": 1023, "ext_data_rw": 1078}
FUSE_DIR_SIZE = 3452


@dataclass(frozen=True)
class Shown:
    """A file's metadata as the phone reports it."""

    mode: int
    """Full `st_mode` (type and permission bits)."""
    user: str
    """Owner name (`u0_a207`, `shell`, `root`)."""
    uid: int
    """Owner uid."""
    group: str
    """Group name (`media_rw`, `ext_data_rw`, `shell`, `root`)."""
    gid: int
    """Group id."""
    size: int
    """`st_size` (a FUSE directory reports 3452)."""


def user_name(uid: int) -> str:
    """`u0_a207` for an app uid, the AID name for a system one."""
    if uid >= 10000:
        return f"u0_a{uid - 10000}"
    return {0: "root", 1000: "system", 2000: "shell"}.get(uid, str(uid))


def _app_uid(phone: PhoneState, package: str) -> int:
    from farm.sim.shell_pm import uid_of

    info = phone.profile.package(package)
    return uid_of(info) if info is not None else MEDIA_PROVIDER_UID


def shown(phone: PhoneState, device_path: str, st: os.stat_result) -> Shown:
    """How `ls -l` and `stat` show the entry at canonical `device_path` whose host lstat is `st`."""
    kind = statmod.S_IFMT(st.st_mode)
    if device_path == STORAGE or device_path.startswith(STORAGE + "/"):
        parts = device_path[len(STORAGE):].strip("/").split("/")
        is_dir = kind == statmod.S_IFDIR
        size = FUSE_DIR_SIZE if is_dir else st.st_size
        if len(parts) >= 3 and parts[0] == "Android" and parts[1] in ("data", "obb", "media"):
            uid = _app_uid(phone, parts[2])
            perms = 0o2771 if is_dir else 0o660
            return Shown(kind | perms if kind in (statmod.S_IFDIR, statmod.S_IFREG) else st.st_mode,
                         user_name(uid), uid, "ext_data_rw", _GIDS["ext_data_rw"], size)
        perms = 0o2770 if is_dir else 0o660
        return Shown(kind | perms if kind in (statmod.S_IFDIR, statmod.S_IFREG) else st.st_mode,
                     user_name(MEDIA_PROVIDER_UID), MEDIA_PROVIDER_UID, "media_rw", _GIDS["media_rw"], size)
    owner = "shell" if kind == statmod.S_IFREG else "root"
    return Shown(st.st_mode, owner, _GIDS[owner], owner, _GIDS[owner], st.st_size)

"""Stream volumes of the virtual phone: kept where Android keeps them, shown as `dumpsys audio` shows them.

Android persists each stream's index per output device in settings system (`volume_music_speaker`,
`volume_ring_speaker`, …; the default device has no suffix). The phone's `settings` table is therefore the one
store: `settings get system volume_music_speaker`, `dumpsys audio` and the volume keys all read or change it.
Streams aliased to another (STREAM_SYSTEM → STREAM_RING, STREAM_TTS → STREAM_MUSIC, …) have no index of their
own: Android rescales the alias's index into their range, and so does this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState


@dataclass(frozen=True)
class Stream:
    """One `AudioSystem` stream type with the AOSP phone defaults of AudioService."""

    name: str
    """`STREAM_MUSIC`."""
    number: int
    """`AudioManager.STREAM_MUSIC` = 3."""
    alias: str
    """The stream whose index it follows on a phone (itself when not aliased)."""
    minimum: int
    """`MIN_STREAM_VOLUME`."""
    maximum: int
    """`MAX_STREAM_VOLUME`."""
    default: int
    """`AudioSystem.DEFAULT_STREAM_VOLUME`, the index before anyone changed it."""
    setting: str
    """Settings system key prefix (`volume_music`); empty for an aliased stream."""
    device: tuple[int, str]
    """Output device the stream plays on with nothing plugged in: (`AudioSystem.DEVICE_OUT_*`, name)."""


_EARPIECE = (0x1, "earpiece")
_SPEAKER = (0x2, "speaker")
_DEFAULT_DEVICE = (0x40000000, "default")
STREAMS: tuple[Stream, ...] = (
    Stream("STREAM_VOICE_CALL", 0, "STREAM_VOICE_CALL", 1, 5, 4, "volume_voice", _EARPIECE),
    Stream("STREAM_SYSTEM", 1, "STREAM_RING", 0, 7, 7, "", _SPEAKER),
    Stream("STREAM_RING", 2, "STREAM_RING", 0, 7, 5, "volume_ring", _SPEAKER),
    Stream("STREAM_MUSIC", 3, "STREAM_MUSIC", 0, 15, 5, "volume_music", _SPEAKER),
    Stream("STREAM_ALARM", 4, "STREAM_ALARM", 1, 7, 6, "volume_alarm", _SPEAKER),
    Stream("STREAM_NOTIFICATION", 5, "STREAM_NOTIFICATION", 0, 7, 5, "volume_notification", _SPEAKER),
    Stream("STREAM_BLUETOOTH_SCO", 6, "STREAM_BLUETOOTH_SCO", 0, 15, 7, "volume_bluetooth_sco", _SPEAKER),
    Stream("STREAM_SYSTEM_ENFORCED", 7, "STREAM_RING", 0, 7, 7, "", _SPEAKER),
    Stream("STREAM_DTMF", 8, "STREAM_RING", 0, 15, 5, "", _SPEAKER),
    Stream("STREAM_TTS", 9, "STREAM_MUSIC", 0, 15, 5, "", _SPEAKER),
    Stream("STREAM_ACCESSIBILITY", 10, "STREAM_MUSIC", 1, 15, 5, "", _SPEAKER),
    Stream("STREAM_ASSISTANT", 11, "STREAM_MUSIC", 0, 15, 5, "", _SPEAKER),
)
_BY_NAME = {s.name: s for s in STREAMS}
# AudioProductStrategy volume-group names differ from the stream names for one stream only.
_GROUP = {"STREAM_SYSTEM_ENFORCED": "AUDIO_STREAM_ENFORCED_AUDIBLE"}
MUSIC = "STREAM_MUSIC"


def stream(name: str) -> Stream:
    """The stream called `name` (`STREAM_MUSIC`)."""
    return _BY_NAME[name]


def stream_by_number(number: int) -> Stream:
    """The stream `AudioManager` numbers `number` (3 → `STREAM_MUSIC`); LookupError for an unknown number."""
    for s in STREAMS:
        if s.number == number:
            return s
    raise LookupError(f"no stream {number}")


def _key(s: Stream, device: tuple[int, str]) -> str:
    # AudioService.VolumeStreamState.getSettingNameForDevice: the default device has no suffix.
    return s.setting if device == _DEFAULT_DEVICE else f"{s.setting}_{device[1]}"


def default_volumes() -> dict[str, str]:
    """Settings system entries of a fresh phone: each persisted stream's index on its device and the default."""
    out: dict[str, str] = {}
    for s in STREAMS:
        if s.setting:
            out[_key(s, s.device)] = str(s.default)
            out[_key(s, _DEFAULT_DEVICE)] = str(s.default)
    return out


def _stored(phone: PhoneState, s: Stream, device: tuple[int, str]) -> int:
    raw = phone.settings.get("system", {}).get(_key(s, device), "")
    try:
        value = int(raw)
    except ValueError:
        value = s.default
    return max(s.minimum, min(s.maximum, value))


def _rescale(value: int, src: Stream, dst: Stream) -> int:
    # AudioService.rescaleIndex, on indices × 10 as AudioService keeps them, then rounded back like getIndex.
    if src is dst:
        return value
    src_range, dst_range = (src.maximum - src.minimum) * 10, (dst.maximum - dst.minimum) * 10
    scaled = dst.minimum * 10 + ((value - src.minimum) * 10 * dst_range + src_range // 2) // src_range
    return (scaled + 5) // 10


def index(phone: PhoneState, name: str, device: tuple[int, str] | None = None) -> int:
    """The stream's index on `device` (its own output by default), following its alias like Android."""
    s = stream(name)
    alias = stream(s.alias)
    value = _stored(phone, alias, device or alias.device)
    return max(s.minimum, min(s.maximum, _rescale(value, alias, s)))


def muted(phone: PhoneState, name: str) -> bool:
    """Whether the stream (or the stream it is aliased to) is muted."""
    return stream(name).alias in phone.muted_streams


def adjust(phone: PhoneState, name: str, direction: int) -> int:
    """A volume key on `name`: +1 raises (and unmutes), -1 lowers, 0 toggles mute; the new index."""
    s = stream(stream(name).alias)
    if direction == 0:
        phone.muted_streams ^= {s.name}
        return index(phone, s.name)
    if direction > 0:
        phone.muted_streams.discard(s.name)
    value = max(s.minimum, min(s.maximum, _stored(phone, s, s.device) + direction))
    phone.settings.setdefault("system", {})[_key(s, s.device)] = str(value)
    return value


def set_index(phone: PhoneState, name: str, value: int) -> int:
    """Set `name` (through its alias) to `value`, clamped to the stream's range, as `cmd media_session volume
    --set` does; the new index."""
    s = stream(stream(name).alias)
    value = max(s.minimum, min(s.maximum, value))
    phone.settings.setdefault("system", {})[_key(s, s.device)] = str(value)
    return value


def dump(phone: PhoneState) -> str:
    """`dumpsys audio`: the stream-volume and volume-group sections, ringer and audio mode (Android 14 layout)."""
    lines = ["Stream volumes (device: index)"]
    for s in STREAMS:
        header = f"- {s.name}:" if s.alias == s.name else f"- {s.name} (aliased to: {s.alias}):"
        device = stream(s.alias).device
        current = f"{device[0]:x} ({device[1]}): {index(phone, s.name)}, " \
                  f"{_DEFAULT_DEVICE[0]:x} ({_DEFAULT_DEVICE[1]}): {index(phone, s.name, _DEFAULT_DEVICE)}"
        lines += [
            header,
            f"   Muted: {str(muted(phone, s.name)).lower()}",
            "   Muted Internally: false",
            f"   Min: {s.minimum}",
            f"   Max: {s.maximum}",
            f"   streamVolume:{index(phone, s.name)}",
            f"   Current: {current}",
            f"   Devices: {device[1]}({device[0]:x})",
            f"   Volume Group: {_GROUP.get(s.name, 'AUDIO_' + s.name)}",
            "",
        ]
    lines += ["", "- mute affected streams = 0x6f", "", "Volume Groups (device: index)"]
    for s in sorted(STREAMS, key=lambda s: _GROUP.get(s.name, "AUDIO_" + s.name)):
        device = stream(s.alias).device
        lines += [
            f"- VOLUME GROUP {_GROUP.get(s.name, 'AUDIO_' + s.name)}:",
            f"   Muted: {str(muted(phone, s.name)).lower()}",
            f"   Min: {s.minimum}",
            f"   Max: {s.maximum}",
            f"   Current: {device[0]:x} ({device[1]}): {index(phone, s.name)}, "
            f"{_DEFAULT_DEVICE[0]:x} ({_DEFAULT_DEVICE[1]}): {index(phone, s.name, _DEFAULT_DEVICE)}",
            f"   Devices: {device[1]}",
            f"   Streams: {s.name} ",
        ]
    lines += [
        "",
        "Ringer mode: ",
        "- mode (internal) = NORMAL",
        "- mode (external) = NORMAL",
        "- zen mode:ZEN_MODE_OFF",
        "- ringer mode affected streams = 0x1a6 (STREAM_SYSTEM,STREAM_RING,STREAM_NOTIFICATION,"
        "STREAM_SYSTEM_ENFORCED,STREAM_DTMF)",
        "- ringer mode muted streams = 0x0",
        "- delegate = ZenModeHelper",
        "",
        "Audio mode: ",
        "- Requested mode = MODE_NORMAL",
        "- Actual mode = MODE_NORMAL",
        "",
    ]
    return "\n".join(lines) + "\n"

"""The shared widget model of the simulated apps: nodes, builders, layout and the App base class.

An app is a small state machine whose `view()` rebuilds its node tree from state on every frame;
the tree is what uiautomator dumps, what screenshots draw and what taps hit-test. State changes
only through the callbacks a node carries (taps), the focused field (text, del, enter) and keys.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState
    from farm.sim.ui import UiDevice

Bounds = tuple[int, int, int, int]
Action = Callable[[], object]


@dataclass
class Node:
    """One view: exactly the attributes a uiautomator dump shows, plus behaviour that is never dumped."""

    cls: str = "android.widget.FrameLayout"
    text: str = ""
    rid: str = ""
    desc: str = ""
    bounds: Bounds = (0, 0, 0, 0)
    clickable: bool = False
    long_clickable: bool = False
    checkable: bool = False
    checked: bool = False
    enabled: bool = True
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    password: bool = False
    selected: bool = False
    hint: str = ""
    package: str = ""
    children: list[Node] = field(default_factory=list)
    on_tap: Action | None = None
    on_long_tap: Action | None = None
    field_key: str | None = None
    scroll_key: str | None = None
    modal: bool = False

    def walk(self) -> Iterator[Node]:
        """This node and every descendant, in document (drawing) order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def contains(self, x: float, y: float) -> bool:
        """Whether the point lies inside this node's bounds."""
        left, top, right, bottom = self.bounds
        return left <= x < right and top <= y < bottom


class Frame:
    """A rectangle that hands out rows from the top (and bottom) — the only layout the apps need."""

    def __init__(self, bounds: Bounds, density: int) -> None:
        self.left, self.top, self.right, self.bottom = bounds
        self.density = density

    def dp(self, value: float) -> int:
        """Density-independent pixels to pixels."""
        return round(value * self.density / 160)

    @property
    def width(self) -> int:
        return self.right - self.left

    def take(self, height_dp: float) -> Bounds:
        """The next row of `height_dp` from the top."""
        height = self.dp(height_dp)
        row = (self.left, self.top, self.right, min(self.top + height, self.bottom))
        self.top = row[3]
        return row

    def take_bottom(self, height_dp: float) -> Bounds:
        """A row of `height_dp` taken from the bottom."""
        height = self.dp(height_dp)
        row = (self.left, max(self.bottom - height, self.top), self.right, self.bottom)
        self.bottom = row[1]
        return row

    def rest(self) -> Bounds:
        """Everything not yet taken."""
        return (self.left, self.top, self.right, self.bottom)


def inset(bounds: Bounds, dx: int, dy: int = 0) -> Bounds:
    """`bounds` shrunk by dx horizontally and dy vertically."""
    left, top, right, bottom = bounds
    return (left + dx, top + dy, right - dx, bottom - dy)


def split_h(bounds: Bounds, weights: Sequence[float]) -> list[Bounds]:
    """Split a row into columns by weight."""
    left, top, right, bottom = bounds
    total = sum(weights)
    out: list[Bounds] = []
    x = float(left)
    for w in weights:
        nx = x + (right - left) * w / total
        out.append((round(x), top, round(nx), bottom))
        x = nx
    return out


def grid(bounds: Bounds, rows: int, cols: int) -> list[list[Bounds]]:
    """Cells of an evenly divided rectangle, row by row."""
    left, top, right, bottom = bounds
    cw, ch = (right - left) / cols, (bottom - top) / rows
    return [
        [
            (round(left + c * cw), round(top + r * ch), round(left + (c + 1) * cw), round(top + (r + 1) * ch))
            for c in range(cols)
        ]
        for r in range(rows)
    ]


# --- builders --------------------------------------------------------------------------------------


def group(bounds: Bounds, children: Sequence[Node], cls: str = "android.widget.LinearLayout", rid: str = "") -> Node:
    """A plain container."""
    return Node(cls=cls, bounds=bounds, children=list(children), rid=rid)


def label(bounds: Bounds, text: str, rid: str = "", desc: str = "") -> Node:
    """Non-interactive text."""
    return Node(cls="android.widget.TextView", text=text, rid=rid, desc=desc, bounds=bounds)


def button(bounds: Bounds, text: str, on_tap: Action, rid: str = "", desc: str = "", enabled: bool = True) -> Node:
    """A clickable button."""
    return Node(
        cls="android.widget.Button", text=text, rid=rid, desc=desc, bounds=bounds,
        clickable=enabled, focusable=True, enabled=enabled, on_tap=on_tap if enabled else None,
    )


def image_button(bounds: Bounds, desc: str, on_tap: Action, rid: str = "") -> Node:
    """A clickable icon described only by its content-desc (like a floating action button)."""
    return Node(
        cls="android.widget.ImageButton", desc=desc, rid=rid, bounds=bounds, clickable=True, focusable=True,
        on_tap=on_tap,
    )


def row(bounds: Bounds, children: Sequence[Node], on_tap: Action | None, rid: str = "", desc: str = "") -> Node:
    """A clickable list row holding text views (the row is what takes the tap)."""
    return Node(
        cls="android.widget.LinearLayout", rid=rid, desc=desc, bounds=bounds, children=list(children),
        clickable=on_tap is not None, focusable=on_tap is not None, on_tap=on_tap,
    )


def switch(bounds: Bounds, text: str, checked: bool, on_tap: Action, rid: str = "") -> Node:
    """A toggle."""
    return Node(
        cls="android.widget.Switch", text=text, rid=rid, bounds=bounds, checkable=True, checked=checked,
        clickable=True, focusable=True, on_tap=on_tap,
    )


def tab(bounds: Bounds, text: str, selected: bool, on_tap: Action, rid: str = "") -> Node:
    """A bottom-navigation or tab-bar item."""
    return Node(
        cls="android.widget.FrameLayout", text="", desc=text, rid=rid, bounds=bounds, clickable=True, focusable=True,
        selected=selected, on_tap=on_tap,
        children=[Node(cls="android.widget.TextView", text=text, bounds=bounds, selected=selected)],
    )


@dataclass
class ListItem:
    """One row of a scrolling list: its height (dp) and how to build it in given bounds."""

    height_dp: float
    build: Callable[[Bounds], Node]


def scroll_list(app: App, key: str, bounds: Bounds, items: Sequence[ListItem], rid: str = "") -> Node:
    """A vertically scrolling list (RecyclerView): only rows in the viewport are in the tree."""
    left, top, right, bottom = bounds
    first = max(0, min(app.scroll.get(key, 0), max(len(items) - 1, 0)))
    app.scroll[key] = first
    children: list[Node] = []
    y = top
    for item in items[first:]:
        h = round(item.height_dp * app.density / 160)
        if y >= bottom:
            break
        children.append(item.build((left, y, right, min(y + h, bottom))))
        y += h
    can_scroll = first > 0 or y > bottom or len(children) < len(items) - first
    return Node(
        cls="androidx.recyclerview.widget.RecyclerView", rid=rid, bounds=bounds, children=children,
        scrollable=can_scroll, focusable=True, scroll_key=key,
    )


# --- the app base class ------------------------------------------------------------------------------


class App:
    """A simulated app: package identity, transient UI state, persisted data and a view.

    Subclasses set `package`, `activity` and implement `view()`. Transient state (page, fields,
    focus, scroll) lives on the instance and dies with force-stop; what must survive a relaunch is
    saved with `save()` as JSON in the app's private dir on the phone's file system.
    Class-level defaults of other transient attributes (`page = "list"`) are what a fresh start sees.
    """

    package: ClassVar[str] = ""
    activity: ClassVar[str] = ".MainActivity"
    activities: ClassVar[dict[str, str]] = {}
    """Activity shown on a page other than the main one (`page` → `.EditActivity`)."""
    page: str = ""

    def __init__(self, ui: UiDevice) -> None:
        self.ui = ui
        self.phone = ui.phone
        self.fields: dict[str, str] = {}
        self.focus: str | None = None
        self.scroll: dict[str, int] = {}
        self.density = self.phone.profile.screen.density

    # identity -----------------------------------------------------------------------------------
    @property
    def label(self) -> str:
        """The launcher label from the profile."""
        info = self.phone.profile.package(self.package)
        return info.label if info and info.label else self.package

    def current_activity(self) -> str:
        """Fully qualified activity shown now (for `dumpsys window`)."""
        activity = self.activities.get(self.page, self.activity)
        return self.package + activity if activity.startswith(".") else activity

    # behaviour ----------------------------------------------------------------------------------
    def view(self, frame: Frame) -> list[Node]:
        """Nodes of the current page laid out in `frame` (the area below the status bar)."""
        raise NotImplementedError

    def open_activity(self, activity: str) -> None:
        """Started with an explicit activity (`am start -n pkg/act`); most apps ignore it."""

    def back(self) -> bool:
        """Handle BACK inside the app; False means the app should be left."""
        return False

    def enter(self) -> None:
        """ENTER pressed while a field of this app is focused."""

    def type_text(self, text: str) -> bool:
        """Text typed with no focused field; True when the app consumed it (e.g. a calculator)."""
        return False

    def field_changed(self, key: str) -> None:
        """Hook after a field's value changed."""

    # fields -------------------------------------------------------------------------------------
    def start_form(self, *keys: str) -> None:
        """Fresh empty fields `keys`, the first one focused."""
        self.fields = dict.fromkeys(keys, "")
        self.focus = keys[0]

    def edit(self, bounds: Bounds, key: str, hint: str, rid: str = "", password: bool = False) -> Node:
        """An EditText bound to `self.fields[key]`; an empty field shows its hint as text, like Android."""
        value = self.fields.get(key, "")
        shown = ("•" * len(value) if password else value) if value else hint

        def focus() -> None:
            self.focus = key

        return Node(
            cls="android.widget.EditText", text=shown, rid=rid, hint=hint, bounds=bounds, clickable=True,
            long_clickable=True, focusable=True, focused=self.focus == key, password=password,
            on_tap=focus, field_key=key,
        )

    def rid(self, name: str) -> str:
        """`<package>:id/<name>`."""
        return f"{self.package}:id/{name}"

    # persistence --------------------------------------------------------------------------------
    def load(self, name: str, default: Any) -> Any:
        """Persisted JSON value `name`, or `default` when never saved."""
        return load_json(self.phone, self.package, name, default)

    def save(self, name: str, value: Any) -> None:
        """Persist a JSON value (atomically: write a temp file, then rename)."""
        save_json(self.phone, self.package, name, value)


def _store_path(package: str, name: str) -> str:
    # A device path: every access goes through the phone's resolver, so nothing the shell moved
    # into the app's directory (a symlink, a FIFO) can lead the app out of the phone.
    return f"/data/data/{package}/files/{name}.json"


def load_json(phone: PhoneState, package: str, name: str, default: Any) -> Any:
    """What `package` saved as `name` on `phone`, or a copy of `default` when it never saved it.

    The one reader of an app's data: the app's screens and the shell's providers and dumps (contacts,
    calendar, alarms) call it, so what the shell reports is what the app shows, never a copy that drifts."""
    try:
        return json.loads(phone.read_text(_store_path(package, name)))
    except (OSError, ValueError):
        return copy.deepcopy(default)


def save_json(phone: PhoneState, package: str, name: str, value: Any) -> None:
    """Persist `value` as `package`'s `name` (atomically: a temp file, then a rename)."""
    phone.write_atomic(_store_path(package, name), json.dumps(value, ensure_ascii=False, indent=1))


def saved_at(phone: PhoneState, package: str, name: str) -> float | None:
    """Wall-clock second `package` last saved `name` (the file's mtime); None when it never did."""
    try:
        return phone.host_path(_store_path(package, name)).stat().st_mtime
    except (OSError, ValueError):
        return None


def next_rowid(records: Sequence[dict[str, Any]]) -> int:
    """A new record's row id: one more than the largest so far (SQLite's rowid, which a provider shows as `_id`)."""
    return 1 + max((r["rowid"] for r in records if isinstance(r.get("rowid"), int)), default=0)


def with_rowids(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`records` in stored order, each with a `rowid`: records saved without one (by an older build or the
    simulated agent) get the next ones in that order, so ids are stable until the app saves them for good."""
    out: list[dict[str, Any]] = []
    for record in records:
        if not isinstance(record.get("rowid"), int):
            record = {**record, "rowid": next_rowid([*records, *out])}
        out.append(record)
    return out


def new_id() -> str:
    """A fresh id for a saved record."""
    return uuid.uuid4().hex[:12]


def by_id(records: Sequence[dict[str, Any]], record_id: str | None) -> dict[str, Any] | None:
    """The record with `id` == record_id, if any."""
    return next((r for r in records if r["id"] == record_id), None)


def without(records: Sequence[dict[str, Any]], record_id: str | None) -> list[dict[str, Any]]:
    """`records` minus the one with `id` == record_id."""
    return [r for r in records if r["id"] != record_id]


def modal(app: App, bounds: Bounds, children: Sequence[Node], rid: str = "") -> Node:
    """A dialog or card over a full-screen scrim that swallows taps outside it."""
    screen = app.phone.profile.screen
    return Node(
        cls="android.widget.FrameLayout", bounds=(0, 0, screen.width, screen.height), on_tap=lambda: None,
        modal=True, children=[group(bounds, children, rid=rid)],
    )


def title_bar(app: App, frame: Frame, title: str, back: Action | None = None) -> list[Node]:
    """A toolbar row with an optional navigate-up button and a title."""
    bar = frame.take(56)
    nodes: list[Node] = []
    cols = split_h(bar, [1, 5])
    if back is not None:
        nodes.append(image_button(cols[0], "返回", back, rid=app.rid("navigate_up")))
        nodes.append(label(cols[1], title, rid=app.rid("title")))
    else:
        nodes.append(label(inset(bar, frame.dp(16)), title, rid=app.rid("title")))
    return [group(bar, nodes, cls="android.view.ViewGroup", rid=app.rid("toolbar"))]

"""Screen shapes the apps share: stacked forms, editor pages, dialogs, lists with a floating button, tabs, rows.

Ids given to these builders are names in the app's package (`save` → `<package>:id/save`) unless they
already name a package (`android:id/button1`), so an app states only its own ids and texts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from farm.sim.apps.base import (
    Action,
    App,
    Bounds,
    Frame,
    ListItem,
    Node,
    button,
    image_button,
    label,
    modal,
    row,
    scroll_list,
    split_h,
    switch,
    tab,
    title_bar,
)


def res_id(app: App, name: str) -> str:
    """`name` as a full resource id: in the app's package unless it already names one."""
    return name if ":" in name else app.rid(name)


@dataclass(frozen=True)
class Field:
    """One text field of a form, optionally with a caption row above it."""

    key: str
    """Key of the value in `App.fields`."""
    hint: str
    """Shown while the field is empty."""
    rid: str
    """Id name of the EditText."""
    caption: str = ""
    """Text of a 32dp label above the field (none when empty)."""
    caption_rid: str = ""
    """Id name of the caption."""
    password: bool = False
    """Whether the value is masked."""
    height_dp: float = 64
    """Height of the field."""


class Form:
    """Rows stacked down a frame (texts, fields, switches, buttons) collected in `nodes`."""

    def __init__(self, app: App, frame: Frame, nodes: list[Node] | None = None) -> None:
        self.app, self.frame = app, frame
        self.nodes: list[Node] = nodes if nodes is not None else []

    def add(self, node: Node) -> Node:
        """Append a node built by the caller."""
        self.nodes.append(node)
        return node

    def gap(self, height_dp: float = 16) -> None:
        """Empty space."""
        self.frame.take(height_dp)

    def text(self, height_dp: float, text: str, rid: str) -> Node:
        """A label row."""
        return self.add(label(self.frame.take(height_dp), text, rid=res_id(self.app, rid)))

    def field(self, spec: Field) -> Node:
        """The field's caption (if any), then the field."""
        if spec.caption:
            self.text(32, spec.caption, spec.caption_rid)
        return self.add(self.app.edit(self.frame.take(spec.height_dp), spec.key, spec.hint,
                                      rid=res_id(self.app, spec.rid), password=spec.password))

    def switch(self, height_dp: float, text: str, checked: bool, on_tap: Action, rid: str) -> Node:
        """A toggle row."""
        return self.add(switch(self.frame.take(height_dp), text, checked, on_tap, rid=res_id(self.app, rid)))

    def button(self, height_dp: float, text: str, on_tap: Action, rid: str) -> Node:
        """A full-width button row."""
        return self.add(button(self.frame.take(height_dp), text, on_tap, rid=res_id(self.app, rid)))


def editor_page(app: App, frame: Frame, title: str, back: Action, fields: Sequence[Field], save: Action,
                save_rid: str = "save") -> list[Node]:
    """A full-screen editor: toolbar with up button, the fields, a 16dp gap and a 保存 button."""
    form = Form(app, frame, title_bar(app, frame, title, back))
    for spec in fields:
        form.field(spec)
    form.gap()
    form.button(64, "保存", save, save_rid)
    return form.nodes


class Dialog(Form):
    """A dialog box between `top` and `bottom` (pixels), 24dp in from the screen sides, over a scrim."""

    def __init__(self, app: App, top: int, bottom: int) -> None:
        box = Frame((app.ui.dp(24), top, app.ui.width - app.ui.dp(24), bottom), app.density)
        super().__init__(app, box)
        self.bounds = box.rest()

    def close(self, on_cancel: Action, ok_text: str, on_ok: Action, rid: str = "android:id/parentPanel",
              cancel_rid: str = "android:id/button2", ok_rid: str = "android:id/button1") -> Node:
        """Finish with a 取消 / `ok_text` button row; the modal node holding the dialog."""
        cancel_b, ok_b = split_h(self.frame.take(64), [1, 1])
        self.add(button(cancel_b, "取消", on_cancel, rid=res_id(self.app, cancel_rid)))
        self.add(button(ok_b, ok_text, on_ok, rid=res_id(self.app, ok_rid)))
        return modal(self.app, self.bounds, self.nodes, rid=res_id(self.app, rid))


def delete_dialog(app: App, top: int, bottom: int, name: str, on_cancel: Action, on_delete: Action) -> Node:
    """The system dialog `要删除“<name>”吗?` with 取消 / 删除."""
    dialog = Dialog(app, top, bottom)
    dialog.text(64, f"要删除“{name}”吗?", "android:id/message")
    return dialog.close(on_cancel, "删除", on_delete)


@dataclass(frozen=True)
class Fab:
    """A floating action button known by its content-desc."""

    desc: str
    """content-desc (the button has no text)."""
    on_tap: Action
    """What a tap does."""
    rid: str
    """Id name."""
    centred: bool = False
    """Centred in its row (else at the right edge)."""


def list_screen(app: App, frame: Frame, nodes: list[Node], key: str, items: Sequence[ListItem], list_rid: str,
                empty: str | None = None, empty_rid: str = "empty", fab: Fab | None = None) -> list[Node]:
    """`nodes` plus the rest of `frame` as a scrolling list, above an optional floating button.

    With `empty` set, an app with no items shows that text (64dp) instead of the list.
    """
    fab_node = _fab(app, frame.take_bottom(88), fab) if fab is not None else None
    if items or empty is None:
        nodes.append(scroll_list(app, key, frame.rest(), items, rid=res_id(app, list_rid)))
    else:
        nodes.append(label(frame.take(64), empty, rid=res_id(app, empty_rid)))
    if fab_node is not None:
        nodes.append(fab_node)
    return nodes


def _fab(app: App, row_bounds: Bounds, fab: Fab) -> Node:
    left, top, right, bottom = row_bounds
    dp = app.ui.dp
    if fab.centred:
        c = (left + right) // 2
        bounds = (c - dp(32), top + dp(12), c + dp(32), bottom - dp(12))
    else:
        bounds = (right - dp(88), top + dp(12), right - dp(24), bottom - dp(12))
    return image_button(bounds, fab.desc, fab.on_tap, rid=res_id(app, fab.rid))


def tab_bar(app: App, bounds: Bounds, tabs: Sequence[tuple[str, str, str]], current: str,
            go: Callable[[str], object]) -> list[Node]:
    """Equal-width tabs (key, text, id name); the one whose key is `current` is selected, a tap calls go(key)."""
    cells = split_h(bounds, [1] * len(tabs))
    return [
        tab(cell, text, key == current, _bind(go, key), rid=res_id(app, rid))
        for cell, (key, text, rid) in zip(cells, tabs, strict=True)
    ]


def _bind(go: Callable[[str], object], key: str) -> Action:
    return lambda: go(key)


def line_row(app: App, bounds: Bounds, text: str, text_rid: str, on_tap: Action | None, rid: str,
             desc: str = "") -> Node:
    """A list row of one text, 16dp in from the left."""
    left, top, right, bottom = bounds
    inner = (left + app.ui.dp(16), top, right, bottom)
    return row(bounds, [label(inner, text, rid=res_id(app, text_rid))], on_tap, rid=res_id(app, rid), desc=desc)


def two_line_row(app: App, bounds: Bounds, upper: tuple[str, str], lower: tuple[str, str] | None,
                 on_tap: Action | None, rid: str = "", desc: str = "", upper_dp: float | None = None,
                 ratio: tuple[int, int] = (1, 2)) -> Node:
    """A list row of two texts (text, id name), 16dp in from both sides; no lower line when `lower` is None.

    The upper line is `upper_dp` tall, or else takes `ratio` of the row.
    """
    left, top, right, bottom = bounds
    pad = app.ui.dp(16)
    mid = top + app.ui.dp(upper_dp) if upper_dp is not None else top + (bottom - top) * ratio[0] // ratio[1]
    kids = [label((left + pad, top, right - pad, mid), upper[0], rid=res_id(app, upper[1]))]
    if lower is not None:
        kids.append(label((left + pad, mid, right - pad, bottom), lower[0], rid=res_id(app, lower[1])))
    return row(bounds, kids, on_tap, rid=res_id(app, rid) if rid else "", desc=desc)

"""The home screen (icons of installed launchable apps) and the recent-apps overview."""

from __future__ import annotations

from farm.sim.apps.base import App, Frame, ListItem, Node, button, grid, group, label, row, scroll_list


class LauncherApp(App):
    """Quickstep-like home screen: one icon per installed package that has a launcher activity."""

    package = "com.android.launcher3"
    activity = "com.android.launcher3.uioverrides.QuickstepLauncher"
    COLUMNS = 4

    def launchable(self) -> list[tuple[str, str]]:
        """(package, label) of every app with a launcher icon, in profile order."""
        return [
            (p.name, p.label or p.name) for p in self.phone.profile.packages if p.launcher_activity is not None
        ]

    def view(self, frame: Frame) -> list[Node]:
        apps = self.launchable()
        rows = [apps[i:i + self.COLUMNS] for i in range(0, len(apps), self.COLUMNS)]

        def make_row(entries: list[tuple[str, str]]) -> ListItem:
            def build(bounds: tuple[int, int, int, int]) -> Node:
                cells = grid(bounds, 1, self.COLUMNS)[0]
                icons = [self._icon(cells[i], pkg, name) for i, (pkg, name) in enumerate(entries)]
                return group(bounds, icons, cls="android.view.ViewGroup")

            return ListItem(104, build)

        frame.take(24)
        workspace = scroll_list(self, "workspace", frame.rest(), [make_row(r) for r in rows],
                                rid=self.rid("workspace"))
        return [workspace]

    def _icon(self, bounds: tuple[int, int, int, int], package: str, name: str) -> Node:
        def open_app() -> None:
            self.ui.launch(package)

        return Node(
            cls="android.widget.TextView", text=name, desc=name, rid=self.rid("icon"), bounds=bounds,
            clickable=True, long_clickable=True, focusable=True, on_tap=open_app,
        )


class RecentsView:
    """The overview of recent apps (APP_SWITCH)."""

    def __init__(self, launcher: App) -> None:
        self.launcher = launcher

    def view(self, frame: Frame) -> list[Node]:
        ui = self.launcher.ui
        recents = list(reversed(ui.running()))
        rid = self.launcher.rid
        clear_row = frame.take_bottom(72)
        items: list[ListItem] = []
        for pkg in recents:
            def build(bounds: tuple[int, int, int, int], pkg: str = pkg) -> Node:
                name = ui.app(pkg).label
                return row(bounds, [label(bounds, name, rid=rid("task_title"))], lambda: ui.launch(pkg),
                           rid=rid("task"), desc=name)

            items.append(ListItem(96, build))
        nodes = [scroll_list(self.launcher, "recents", frame.rest(), items, rid=rid("overview_panel"))]

        def clear_all() -> None:
            for pkg in list(ui.running()):
                ui.force_stop(pkg)
            ui.go_home()

        if recents:
            nodes.append(button(clear_row, "全部清除", clear_all, rid=rid("clear_all")))
        else:
            nodes.append(label(clear_row, "无近期使用的应用", rid=rid("recents_empty")))
        return nodes

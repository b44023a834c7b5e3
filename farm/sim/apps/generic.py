"""A blank app for installed packages that have no simulated UI (shows its label only)."""

from __future__ import annotations

from farm.sim.apps.base import App, Frame, Node, label, title_bar


def generic_app(package: str) -> type[App]:
    """An App subclass for `package` that shows a title and an empty page."""

    class GenericApp(App):
        def view(self, frame: Frame) -> list[Node]:
            nodes = title_bar(self, frame, self.label)
            nodes.append(label(frame.take(48), "", rid=self.rid("empty")))
            return nodes

        def current_activity(self) -> str:
            info = self.phone.profile.package(self.package)
            act = info.launcher_activity if info and info.launcher_activity else ".MainActivity"
            return self.package + act if act.startswith(".") else act

    GenericApp.package = package
    return GenericApp

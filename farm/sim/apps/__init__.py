"""The simulated apps of the virtual phone, keyed by package name (see README.md for their screens)."""

from __future__ import annotations

from farm.sim.apps.base import App


def _registry() -> dict[str, type[App]]:
    from farm.sim.apps.browser import BrowserApp
    from farm.sim.apps.calculator import CalculatorApp
    from farm.sim.apps.calendar import CalendarApp
    from farm.sim.apps.clock import ClockApp
    from farm.sim.apps.contacts import ContactsApp
    from farm.sim.apps.files import FilesApp
    from farm.sim.apps.messenger import MessengerApp
    from farm.sim.apps.notes import NotesApp
    from farm.sim.apps.settings import SettingsApp
    from farm.sim.apps.shop import ShopApp
    from farm.sim.apps.weather import WeatherApp

    classes: list[type[App]] = [
        SettingsApp, CalculatorApp, ClockApp, ContactsApp, CalendarApp, FilesApp, NotesApp, ShopApp,
        MessengerApp, BrowserApp, WeatherApp,
    ]
    return {cls.package: cls for cls in classes}


def app_class(package: str) -> type[App]:
    """The app class simulating `package`; a blank app for packages without a simulation."""
    from farm.sim.apps.generic import generic_app

    return _registry().get(package) or generic_app(package)


def simulated_packages() -> list[str]:
    """Packages that have a real simulated UI."""
    return sorted(_registry())


def launcher_package() -> str:
    """The home-screen package."""
    return "com.android.launcher3"

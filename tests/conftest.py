"""Shared fixtures. Tests never touch a developer's adb server: see tests/helpers/phones.py."""

from tests.helpers.phones import virtual_farm, virtual_phone  # noqa: F401

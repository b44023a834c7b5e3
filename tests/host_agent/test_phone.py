import threading

import pytest

from host_agent.phone import Phone, PhoneError


class _StalledLink:
    """A uiautomator2 stand-in whose dump never returns (a stalled USB link), released at teardown."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def dump_hierarchy(self) -> str:
        self.release.wait(30)
        return "<hierarchy/>"

    def click(self, x: int, y: int) -> None:
        raise AssertionError("must not be reached")


def test_a_call_that_never_returns_is_a_phone_error_and_the_phone_stays_unusable() -> None:
    link = _StalledLink()
    phone = Phone(link, call_timeout_s=0.2)
    try:
        with pytest.raises(PhoneError, match="dump_hierarchy got no answer"):
            phone.read()
        with pytest.raises(PhoneError, match="unusable"):
            phone.tap(1, 2)
    finally:
        link.release.set()


def test_errors_of_the_device_library_become_phone_errors() -> None:
    class _Gone:
        def click(self, x: int, y: int) -> None:
            raise ConnectionResetError("device offline")

    with pytest.raises(PhoneError, match="click: ConnectionResetError: device offline"):
        Phone(_Gone()).tap(1, 2)

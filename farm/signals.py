"""Stopping long work politely: the first Ctrl-C or SIGTERM asks running work to wind down."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def stop_on_signals(stop: threading.Event, on_stop: Callable[[str], None]) -> Iterator[None]:
    """SIGINT and SIGTERM set `stop` (dispatch ends, running units finish); a second SIGINT interrupts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()
        on_stop(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)

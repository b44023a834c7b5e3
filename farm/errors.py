"""The one error type the CLI turns into a one-line message and exit status 2."""

from __future__ import annotations


class FarmError(Exception):
    """A precondition failed: bad input, a missing device, a refused overwrite.

    The message is one line that names the file/field/device and says how to fix it.
    """

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(self.line())

    def line(self) -> str:
        """The message and, when known, the fix, on one line."""
        text = " ".join(self.message.split())
        return f"{text} — {self.hint}" if self.hint else text

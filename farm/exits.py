"""The exit statuses of every `farm` command and lane, in one place every layer may import."""

from __future__ import annotations

EXIT_OK = 0
"""Every unit finished and every attempted one passed (skips are not attempts), or the pass rate reached
`--fail-under` with no infrastructure error."""
EXIT_FAILED = 1
"""Every unit finished, some did not pass (the agent failed them), and no `--fail-under` was given."""
EXIT_BAD_INPUT = 2
"""Bad input: one line on stderr names the flag, file, field or device and the fix."""
EXIT_UNFINISHED = 3
"""Some units were left unfinished (their phones were lost or quarantined, or the sweep was stopped)."""
EXIT_BELOW = 4
"""Every unit finished, but the pass rate is below `--fail-under`."""
EXIT_INFRA = 5
"""Every unit finished, but some ended in an infrastructure error after every try: the numbers are short."""
EXIT_INTERNAL = 70
"""A bug (EX_SOFTWARE): one line on stderr names the exception and the log file holding the traceback."""
EXIT_INTERRUPTED = 130
"""Work stopped by Ctrl-C or SIGTERM (128 + SIGINT)."""

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
"""Some units were left unfinished (their phones were lost or quarantined, or the sweep was stopped: by a signal, or
by a full disk, whose one line names the filesystem, its free space and what is needed). Resume the run."""
EXIT_BELOW = 4
"""Every unit finished, but the pass rate is below `--fail-under`."""
EXIT_INFRA = 5
"""Every unit finished, but some ended in an infrastructure error after every try: the numbers are short."""
EXIT_HOST_LOST = 6
"""Infrastructure lost: an adb server farm.yaml lists (a farm host) did not answer, at the start or during the
run, so its phones ran nothing or stopped; the numbers leave a host out. One line per lost host on stderr names it,
why, and the phones it had on the last run. Bring the host back; units left unfinished are run by `--resume RUN`.
Distinct from 5 (units that had their tries): the run never saw those phones, so no record counts them."""
EXIT_INTERNAL = 70
"""A bug (EX_SOFTWARE): one line on stderr names the exception and the log file holding the traceback."""
EXIT_INTERRUPTED = 130
"""Work stopped by Ctrl-C or SIGTERM (128 + SIGINT)."""

MEANINGS: dict[int, str] = {
    EXIT_OK: "every unit finished and passed (or the pass rate reached --fail-under)",
    EXIT_FAILED: "every unit finished, some failed",
    EXIT_BAD_INPUT: "did not run: bad input, no healthy phone, too little free space, another sweep holds the farm, "
                    "or another run holds the phone",
    EXIT_UNFINISHED: "units left unfinished (phones lost or quarantined, a full disk, or a stop): resume the run",
    EXIT_BELOW: "the pass rate is below --fail-under",
    EXIT_INFRA: "infrastructure errors after every try",
    EXIT_HOST_LOST: "infrastructure lost: a listed adb server did not answer",
    EXIT_INTERNAL: "crashed (a bug: see the log named on stderr)",
    EXIT_INTERRUPTED: "stopped by Ctrl-C or SIGTERM",
}
"""Each exit status in a few words, for what reports it to people (the notify payload); the docstrings above say
what to do with each."""

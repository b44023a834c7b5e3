"""`farm query` within bounds: the records are ours, the SQL is not.

Any SELECT may run for ever (`select count(*) from range(1000000000000)`, an endless recursive CTE, a cross
join of cross joins) or take all the memory (DuckDB's default limit is 80 % of RAM). Here a query gets:

- a time limit, counted from the start of the SQL (`--timeout`, farm.yaml `query.timeout_s`): past it the
  query is interrupted and refused, exit 2, one line naming the limit and the flag;
- a memory limit and a thread cap for DuckDB (`--memory-mb`, `query.memory_mb`, `query.threads`), set before
  the records are read and locked with the rest of the connection, nothing spilled to disk;
- a stop on Ctrl-C or SIGTERM, exit 130 with one line naming the signal;
- a row cap (`--max-rows`, `query.max_rows`; `--all` lifts it): the first rows are kept, the rest counted
  without being kept, so a result of a billion rows holds a thousand in memory.

DuckDB runs a statement in a C call that holds the calling thread until it returns, and Python runs a
signal handler only between bytecodes of the main thread. So DuckDB runs in a worker thread; the main
thread waits on it in short polls, where the SIGINT/SIGTERM handlers and the clock can act, and stops it
with `interrupt()`, which DuckDB allows from any thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from farm.errors import FarmError
from farm.exits import EXIT_INTERRUPTED

if TYPE_CHECKING:
    import duckdb

    from farm.config import QueryLimits
    from farm.results.damage import Damage

DEFAULT_TIMEOUT_S = 10.0
"""Time limit of one query (seconds): a question about the records is answered in well under a second."""
MAX_TIMEOUT_S = 3600.0
"""Longest time limit accepted (an hour): there is no unbounded query."""
DEFAULT_MEMORY_MB = 2048
"""DuckDB's memory limit (MiB), unless half the RAM is less."""
MIN_MEMORY_MB = 64
"""Smallest memory limit accepted: below it DuckDB fails on the records themselves."""
DEFAULT_THREADS = 4
"""DuckDB worker threads: a query shares the host with running sweeps."""
MAX_THREADS = 256
"""Most threads accepted."""
DEFAULT_MAX_ROWS = 1000
"""Rows printed unless `--all`."""
MAX_ROWS = 1_000_000
"""Largest `--max-rows` accepted (`--all` prints every row)."""

POLL_S = 0.05
"""How often the waiting main thread looks at the clock (signals reach it at once)."""
STOP_GRACE_S = 5.0
"""How long a query may take to stop after its interrupt before the command gives up on it."""
_COUNT_CHUNK = 10_000
"""Rows fetched at a time while counting rows past the cap (then dropped)."""

_QUERY_HINT = "one SELECT over the views records, runs, devices"
_SIGNAL_WORDS = {"SIGINT": "Ctrl-C (SIGINT)", "SIGTERM": "SIGTERM"}
_TIMEOUT = "timeout"


def default_memory_mb() -> int:
    """`DEFAULT_MEMORY_MB`, or half the RAM when that is less (never below `MIN_MEMORY_MB`)."""
    try:
        ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (AttributeError, ValueError, OSError):
        return DEFAULT_MEMORY_MB  # no sysconf (Windows): the fixed default
    return max(MIN_MEMORY_MB, min(DEFAULT_MEMORY_MB, ram_mb // 2))


@dataclass(frozen=True)
class QueryBounds:
    """The limits one `farm query` runs under."""

    timeout_s: float
    """Seconds the SQL may run (fetching its rows included)."""
    memory_mb: int
    """DuckDB's memory limit (MiB)."""
    threads: int
    """DuckDB's worker threads."""
    max_rows: int | None
    """Rows kept and printed; None: every row (`--all`)."""

    def settings(self) -> list[str]:
        """The DuckDB statements setting these limits: run before the records are read, then locked."""
        return [
            f"SET memory_limit = '{self.memory_mb}MiB'",
            f"SET threads = {self.threads}",
            # An in-memory database would spill to `./.tmp`: a query past the memory limit fails instead.
            "SET temp_directory = ''",
            "SET max_temp_directory_size = '0B'",
        ]


def query_bounds(
    configured: QueryLimits,
    *,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
    max_rows: int | None = None,
    all_rows: bool = False,
) -> QueryBounds:
    """The limits of one query: each flag given (`--timeout`, `--memory-mb`, `--max-rows`, `--all`) over
    farm.yaml's `query` section over the defaults. A flag outside its range is a FarmError naming it."""
    from pydantic import ValidationError

    from farm.config import QueryLimits

    if all_rows and max_rows is not None:
        raise FarmError("--all and --max-rows both given", hint="pass one of them")
    flags = {"timeout_s": ("--timeout", timeout_s), "memory_mb": ("--memory-mb", memory_mb),
             "max_rows": ("--max-rows", max_rows)}
    given = {key: value for key, (_, value) in flags.items() if value is not None}
    try:
        # The same model as farm.yaml's section, so a flag has exactly the bounds of the setting.
        chosen = QueryLimits.model_validate({**configured.model_dump(exclude_unset=True), **given})
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        flag, value = flags.get(key, (key, None))
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise FarmError(f"{flag} {value}: {msg}", hint=f"see `farm query --help` (farm.yaml query.{key})") from None
    return QueryBounds(
        timeout_s=chosen.timeout_s,
        memory_mb=chosen.memory_mb if chosen.memory_mb is not None else default_memory_mb(),
        threads=chosen.threads,
        max_rows=None if all_rows else chosen.max_rows,
    )


class QueryStopped(FarmError):
    """The query was stopped by Ctrl-C or SIGTERM: one line, exit 130."""

    exit_code = EXIT_INTERRUPTED


@dataclass
class QueryRows:
    """What one bounded query returned."""

    columns: list[str]
    """Column names, in order."""
    rows: list[tuple[object, ...]]
    """The rows kept: every row, or the first `max_rows`."""
    more: int = 0
    """Rows past the cap, counted and dropped."""
    counted: bool = True
    """False when counting `more` ran into the time limit: there are at least `more`."""
    damaged: list[tuple[Path, Damage]] = field(default_factory=list)
    """Record files with damaged lines (skipped by the views), for warnings."""

    def more_text(self, bounds: QueryBounds) -> str | None:
        """The one line saying rows were left out (None when none were): how many, and how to see them."""
        if self.counted and not self.more:
            return None
        rows = f"{self.more} more {'row' if self.more == 1 else 'rows'}"
        if self.counted:
            what, why = rows, ""
        else:
            what = f"at least {rows}" if self.more else f"more rows may follow the first {bounds.max_rows}, they are"
            why = f"; counting stopped at the {_seconds(bounds.timeout_s)} time limit"
        return f"{what} not shown (--max-rows {bounds.max_rows}{why}); pass --all to print every row, or add LIMIT"


def _seconds(value: float) -> str:
    return f"{value:g} s"


class _Stop:
    """Why a running query is being stopped, and the connection to interrupt; shared by the waiting main thread
    (signal handlers, the clock) and the worker. Reentrant: a signal handler runs on the main thread, possibly
    while that thread holds the lock."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self.reason: str | None = None
        """`timeout`, or the name of the signal (`SIGINT`, `SIGTERM`); None while the query may run."""
        self.sql_started: float | None = None
        """`time.monotonic()` when the user's SQL started (the time limit counts from there)."""

    def attach(self, con: duckdb.DuckDBPyConnection | None) -> None:
        """The connection the worker runs on, from now on interruptible; None before the worker closes it (a
        closed connection refuses `interrupt()`)."""
        with self._lock:
            self._con = con

    def stop(self, reason: str) -> None:
        """Stop the query for `reason` (the first reason stays)."""
        with self._lock:
            if self.reason is None:
                self.reason = reason
        self.interrupt()

    def interrupt(self) -> None:
        """Interrupt whatever statement the connection runs. DuckDB clears an interrupt when the next statement
        starts, so the waiting thread repeats this on every poll until the worker is done."""
        with self._lock:
            # Under the lock: the worker cannot close the connection between the check and the call.
            if self._con is not None:
                self._con.interrupt()

    def check(self) -> None:
        """In the worker, between statements: stop here when a reason came."""
        if self.reason is not None:
            raise _Interrupted


class _Interrupted(Exception):
    """The worker saw a stop reason between two statements."""


def _signals_stop(stop: _Stop) -> AbstractContextManager[None]:
    """SIGINT and SIGTERM stop the query; a second SIGINT interrupts at once (KeyboardInterrupt, exit 130). A
    stop for the time limit is not a signal: a Ctrl-C after it still stops politely first."""
    from farm.signals import stop_on_signals

    return stop_on_signals(threading.Event(), stop.stop)


def bounded_connection(
    run_dirs: Sequence[Path], bounds: QueryBounds, stop: _Stop | None = None
) -> duckdb.DuckDBPyConnection:
    """`duck.query_connection`, with the limits set before the records are read (the memory limit bounds the
    read too) and locked with the rest. Interruptible (through `stop`) from the moment it exists."""
    from farm.results import duck

    stop = stop or _Stop()
    con = duck.query_connection(run_dirs, bounds.settings(), on_open=stop.attach)
    stop.check()
    return con


def _fetch(cur: duckdb.DuckDBPyConnection, bounds: QueryBounds, stop: _Stop) -> QueryRows:
    """The rows of the running statement: all of them, or the first `max_rows` and a count of the rest."""
    import duckdb

    columns = [c[0] for c in (cur.description or [])]
    if bounds.max_rows is None:
        return QueryRows(columns, cur.fetchall())
    rows = cur.fetchmany(bounds.max_rows)
    more = 0
    try:
        while batch := cur.fetchmany(_COUNT_CHUNK):
            more += len(batch)
            stop.check()
    except (duckdb.InterruptException, _Interrupted):
        if stop.reason != _TIMEOUT:
            raise
        # The rows asked for are here; only the count of the rest ran out of time: say "at least".
        return QueryRows(columns, rows, more, counted=False)
    return QueryRows(columns, rows, more)


def _work(run_dirs: Sequence[Path], sql: str, bounds: QueryBounds, stop: _Stop) -> QueryRows:
    """The worker's whole job: damaged lines, the connection, the SQL and its rows."""
    from farm.results import duck

    damaged = duck.damaged_lines(run_dirs)
    stop.check()
    con = bounded_connection(run_dirs, bounds, stop)
    try:
        stop.check()
        stop.sql_started = time.monotonic()
        cur = con.execute(sql)
        got = _fetch(cur, bounds, stop)
    finally:
        stop.attach(None)
        con.close()
    got.damaged = damaged
    return got


def run_query(run_dirs: Sequence[Path], sql: str, bounds: QueryBounds) -> QueryRows:
    """Run one SELECT (see `duck.check_query`) on the records of `run_dirs` within `bounds`.

    A SQL error, the time limit or the memory limit is a one-line FarmError (exit 2); Ctrl-C or SIGTERM a
    `QueryStopped` (exit 130)."""
    from farm.results import duck

    duck.check_query(sql)
    stop = _Stop()
    outcome: list[QueryRows] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            outcome.append(_work(run_dirs, sql, bounds, stop))
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            failure.append(exc)

    worker = threading.Thread(target=work, name="farm-query", daemon=True)
    with _signals_stop(stop):
        worker.start()
        try:
            _wait(worker, stop, bounds)
        finally:
            if worker.is_alive():  # a second Ctrl-C, or a query that would not stop: leave it interrupted
                stop.stop("SIGINT")
    if stop.reason is not None and stop.reason != _TIMEOUT:
        raise QueryStopped(f"query stopped by {_SIGNAL_WORDS.get(stop.reason, stop.reason)}")
    if outcome:
        return outcome[0]
    if stop.reason == _TIMEOUT:
        raise FarmError(f"query: stopped at the {_seconds(bounds.timeout_s)} time limit",
                        hint="narrow the query (WHERE, LIMIT), or allow longer with --timeout SECONDS")
    # No stop reason, so the worker ended, without rows: it failed.
    _raise(failure[0], bounds, sql_started=stop.sql_started is not None)


def _wait(worker: threading.Thread, stop: _Stop, bounds: QueryBounds) -> None:
    """Wait for the worker in short polls (signal handlers run in between); past the time limit, stop it. Once
    stopped, keep interrupting until it ends, for at most STOP_GRACE_S."""
    stopped_at: float | None = None
    while worker.is_alive():
        worker.join(POLL_S)
        now = time.monotonic()
        started = stop.sql_started
        if stop.reason is None and started is not None and now - started > bounds.timeout_s:
            stop.stop(_TIMEOUT)
        if stop.reason is not None:
            stopped_at = stopped_at if stopped_at is not None else now
            if now - stopped_at > STOP_GRACE_S:
                return
            stop.interrupt()


def _raise(exc: BaseException, bounds: QueryBounds, *, sql_started: bool) -> NoReturn:
    """The worker's failure, as the one line a person reads."""
    import duckdb

    if isinstance(exc, duckdb.OutOfMemoryException):
        what = "the query needs" if sql_started else "reading the records needs"
        raise FarmError(f"query: {what} more than the {bounds.memory_mb} MB memory limit",
                        hint="narrow the query (or pick runs with --run), or allow more with --memory-mb MB") from None
    if isinstance(exc, duckdb.Error):
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise FarmError(f"query: {first}", hint=_QUERY_HINT) from None
    raise exc


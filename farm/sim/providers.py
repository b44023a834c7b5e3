"""The content providers the virtual phone's shell can query (`content query --uri content://…`).

Each provider reads the store its app writes — the contacts app's contacts, the calendar app's events, the
`settings` tables — at the moment of the query, so a row is exactly what the app shows. Providers without an
app on the virtual phone (call log, SMS: the messenger is a chat app without phone numbers, so it has no SMS)
are real but empty, backed by a store under the providing package's data directory that nothing writes yet.

Rows go through a small SQL subset: `--projection a:b`, `--where` with comparisons (`=`, `!=`, `<>`, `<`, `<=`,
`>`, `>=`), `LIKE` / `NOT LIKE`, `IS [NOT] NULL`, `AND` / `OR` / `NOT` and parentheses, and `--sort "col [ASC|DESC],
…"`. What falls outside it is refused with the SQLiteException a phone raises for a clause SQLite cannot
compile; what a phone's SQLite would accept but this subset does not is refused the same way.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from farm.sim.apps.base import load_json

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState

Value = str | int | float | None
Row = dict[str, Value]


class ProviderError(Exception):
    """What the provider throws back to `content`: the exception class and message it prints."""

    def __init__(self, exception: str, message: str) -> None:
        super().__init__(f"{exception}: {message}")
        self.exception = exception
        self.message = message


@dataclass(frozen=True)
class Table:
    """One queryable URI of a provider."""

    columns: tuple[str, ...]
    """Every column, in the order a query without `--projection` returns them."""
    rows: Callable[[PhoneState], list[Row]]
    """The rows, read from the app's store at query time, in the provider's default order."""
    sql_table: str
    """The table or view name the provider compiles its SELECT against (shown in SQLite errors)."""
    strict: bool = True
    """Whether an unknown projection column is refused with `Invalid column` (a projection map in strict mode,
    as in ContactsProvider2 and CalendarProvider2) rather than by SQLite (`no such column`)."""


@dataclass(frozen=True)
class Provider:
    """One authority: the class a refusal names, the permissions it requires, its tables."""

    authority: str
    """`com.android.contacts`."""
    class_name: str
    """`com.android.providers.contacts.ContactsProvider2`."""
    read_permission: str
    """The permission `Permission Denial` names first."""
    write_permission: str
    """The permission it names second."""
    tables: dict[str, Table]
    """Path (`data/phones`) → table."""


# --- the stores ------------------------------------------------------------------------------------------------


def _contacts(phone: PhoneState) -> list[dict[str, Any]]:
    from farm.sim.apps.contacts import saved_contacts

    return sorted(saved_contacts(phone), key=lambda c: c["rowid"])


def _lookup(contact: dict[str, Any]) -> str:
    return f"0r{contact['rowid']}-{zlib.crc32(str(contact['name']).encode()) & 0xFFFF:X}"


def _contact_rows(phone: PhoneState) -> list[Row]:
    return [{
        "_id": c["rowid"], "display_name": c["name"] or c["phone"], "display_name_alt": c["name"] or c["phone"],
        "has_phone_number": 1 if c["phone"] else 0, "lookup": _lookup(c), "starred": 0, "times_contacted": 0,
        "photo_id": None, "name_raw_contact_id": c["rowid"],
    } for c in _contacts(phone)]


_NAME_MIME = "vnd.android.cursor.item/name"
_PHONE_MIME = "vnd.android.cursor.item/phone_v2"


def _data_rows(phone: PhoneState, phones_only: bool) -> list[Row]:
    rows: list[Row] = []
    for c in _contacts(phone):
        shown = c["name"] or c["phone"]
        common: Row = {"contact_id": c["rowid"], "raw_contact_id": c["rowid"], "display_name": shown,
                       "lookup": _lookup(c)}
        if not phones_only and c["name"]:
            rows.append({"_id": c["rowid"] * 2 - 1, **common, "mimetype": _NAME_MIME, "data1": c["name"],
                         "data2": c["name"], "data3": None, "data4": None, "is_primary": 0})
        if c["phone"]:
            rows.append({"_id": c["rowid"] * 2, **common, "mimetype": _PHONE_MIME, "data1": c["phone"],
                         "data2": 2, "data3": None, "data4": _normalized(c["phone"]), "is_primary": 0})
    return rows


def _normalized(number: str) -> str | None:
    # Phone.NORMALIZED_NUMBER: E.164 when libphonenumber can tell the country; a Chinese mobile number here.
    digits = re.sub(r"[^\d+]", "", number)
    if digits.startswith("+"):
        return digits
    if re.fullmatch(r"1\d{10}", digits):
        return "+86" + digits
    return None


def _epoch_ms(when: datetime) -> int:
    return round(when.timestamp() * 1000)


def _event_rows(phone: PhoneState) -> list[Row]:
    from farm.sim.apps.calendar import saved_events

    zone = phone.now().tzinfo
    tz_name = phone.profile.timezone
    rows: list[Row] = []
    for event in sorted(saved_events(phone), key=lambda e: e["rowid"]):
        when = str(event["when"])
        all_day = " " not in when
        if all_day:
            # CalendarContract: all-day events start at UTC midnight and are stored in UTC.
            start = datetime.strptime(when, "%Y-%m-%d").replace(tzinfo=ZoneInfo("UTC"))
            end = start + timedelta(days=1)
        else:
            # The editor has no end time: the event lasts the calendar's default hour.
            start = datetime.strptime(when, "%Y-%m-%d %H:%M").replace(tzinfo=zone)
            end = start + timedelta(hours=1)
        rows.append({
            "_id": event["rowid"], "calendar_id": 1, "title": event["title"], "description": None,
            "eventLocation": None, "dtstart": _epoch_ms(start), "dtend": _epoch_ms(end),
            "eventTimezone": "UTC" if all_day else tz_name, "allDay": 1 if all_day else 0, "rrule": None,
            "deleted": 0, "calendar_displayName": "手机", "organizer": None, "hasAlarm": 0,
        })
    return rows


def _stored_rows(package: str, name: str, columns: tuple[str, ...]) -> Callable[[PhoneState], list[Row]]:
    """Rows a provider without a simulated app keeps in `/data/data/<package>/files/<name>.json` (a JSON list of
    objects; missing columns read as NULL). Nothing on the virtual phone writes it: such a provider is empty."""

    def read(phone: PhoneState) -> list[Row]:
        stored = load_json(phone, package, name, [])
        rows = stored if isinstance(stored, list) else []
        return [{c: r.get(c) for c in columns} for r in rows if isinstance(r, dict)]

    return read


def _settings_rows(namespace: str) -> Callable[[PhoneState], list[Row]]:
    def read(phone: PhoneState) -> list[Row]:
        table = phone.settings.get(namespace, {})
        return [{"_id": n, "name": k, "value": v} for n, (k, v) in enumerate(sorted(table.items()), start=1)]

    return read


_CONTACT_COLUMNS = ("_id", "display_name", "display_name_alt", "has_phone_number", "lookup", "starred",
                    "times_contacted", "photo_id", "name_raw_contact_id")
_DATA_COLUMNS = ("_id", "contact_id", "raw_contact_id", "display_name", "lookup", "mimetype", "data1", "data2",
                 "data3", "data4", "is_primary")
_EVENT_COLUMNS = ("_id", "calendar_id", "title", "description", "eventLocation", "dtstart", "dtend",
                  "eventTimezone", "allDay", "rrule", "deleted", "calendar_displayName", "organizer", "hasAlarm")
_CALL_COLUMNS = ("_id", "number", "date", "duration", "type", "name", "numbertype", "numberlabel", "new",
                 "is_read", "geocoded_location", "subscription_id")
_SMS_COLUMNS = ("_id", "thread_id", "address", "person", "date", "date_sent", "protocol", "read", "status",
                "type", "reply_path_present", "subject", "body", "service_center", "locked", "sub_id",
                "error_code", "creator", "seen")

PROVIDERS: dict[str, Provider] = {p.authority: p for p in (
    Provider("com.android.contacts", "com.android.providers.contacts.ContactsProvider2",
             "android.permission.READ_CONTACTS", "android.permission.WRITE_CONTACTS", {
                 "contacts": Table(_CONTACT_COLUMNS, _contact_rows, "view_contacts"),
                 "data": Table(_DATA_COLUMNS, lambda p: _data_rows(p, False), "view_data data"),
                 "data/phones": Table(_DATA_COLUMNS, lambda p: _data_rows(p, True), "view_data data"),
             }),
    Provider("com.android.calendar", "com.android.providers.calendar.CalendarProvider2",
             "android.permission.READ_CALENDAR", "android.permission.WRITE_CALENDAR", {
                 "events": Table(_EVENT_COLUMNS, _event_rows, "view_events"),
             }),
    Provider("call_log", "com.android.providers.contacts.CallLogProvider",
             "android.permission.READ_CALL_LOG", "android.permission.WRITE_CALL_LOG", {
                 "calls": Table(_CALL_COLUMNS, _stored_rows("com.android.providers.contacts", "calls", _CALL_COLUMNS),
                                "calls"),
             }),
    Provider("sms", "com.android.providers.telephony.SmsProvider",
             "android.permission.READ_SMS", "android.permission.WRITE_SMS", {
                 "": Table(_SMS_COLUMNS, _stored_rows("com.android.providers.telephony", "sms", _SMS_COLUMNS),
                           "sms", strict=False),
                 "inbox": Table(_SMS_COLUMNS, lambda p: [r for r in _sms(p) if r["type"] == 1], "sms", strict=False),
                 "sent": Table(_SMS_COLUMNS, lambda p: [r for r in _sms(p) if r["type"] == 2], "sms", strict=False),
             }),
    Provider("settings", "com.android.providers.settings.SettingsProvider",
             "android.permission.WRITE_SETTINGS", "android.permission.WRITE_SETTINGS", {
                 ns: Table(("_id", "name", "value"), _settings_rows(ns), ns, strict=False)
                 for ns in ("system", "secure", "global")
             }),
)}


def _sms(phone: PhoneState) -> list[Row]:
    return _stored_rows("com.android.providers.telephony", "sms", _SMS_COLUMNS)(phone)


# --- the query --------------------------------------------------------------------------------------------------


def split_uri(uri: str) -> tuple[str, str]:
    """`content://com.android.contacts/data/phones?x=1` → (`com.android.contacts`, `data/phones`)."""
    rest = uri.split("://", 1)[1] if "://" in uri else uri
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    authority, _, path = rest.partition("/")
    return authority, path.strip("/")


def query(phone: PhoneState, uri: str, projection: list[str] | None, where: str | None,
          sort: str | None) -> tuple[list[str], list[Row]]:
    """(columns, rows) of a `content query` on a provider this module has; ProviderError as the provider would."""
    authority, path = split_uri(uri)
    provider = PROVIDERS[authority]
    table = provider.tables.get(path)
    if table is None and path.split("/")[-1].isdigit() and path.rsplit("/", 1)[0] in provider.tables:
        # content://…/events/7: that one row (`_id` = 7), as every provider's item URI does.
        table = provider.tables[path.rsplit("/", 1)[0]]
        item = int(path.rsplit("/", 1)[1])
        where = f"_id = {item}" + (f" AND ({where})" if where else "")
    if table is None:
        raise ProviderError("java.lang.IllegalArgumentException", f"Unknown URL {uri}")
    columns = list(table.columns) if not projection else projection
    sql = _select(columns, table, where, sort)
    for name in columns:
        if name not in table.columns:
            if table.strict:
                raise ProviderError("java.lang.IllegalArgumentException", f"Invalid column {name}")
            raise _sqlite(f"no such column: {name}", sql)
    rows = table.rows(phone)
    if where:
        condition = _Where(where, table.columns, sql).parse()
        rows = [r for r in rows if condition(r) is True]
    if sort:
        rows = _sorted(rows, sort, table.columns, sql)
    return columns, [{c: r.get(c) for c in columns} for r in rows]


def _select(columns: list[str], table: Table, where: str | None, sort: str | None) -> str:
    sql = f"SELECT {', '.join(columns)} FROM {table.sql_table}"
    if where:
        sql += f" WHERE ({where})"
    if sort:
        sql += f" ORDER BY {sort}"
    return sql


def _sqlite(message: str, sql: str) -> ProviderError:
    return ProviderError("android.database.sqlite.SQLiteException",
                         f"{message} (code 1 SQLITE_ERROR): , while compiling: {sql}")


_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op><>|!=|<=|>=|==|=|<|>|\(|\))"
                    r"|(?P<word>[A-Za-z_][A-Za-z0-9_.]*)|(?P<bad>\S+))")


class _Where:
    """A recursive-descent parser of the WHERE subset into a predicate over a row (SQL three-valued: None)."""

    def __init__(self, text: str, columns: tuple[str, ...], sql: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup or "bad"
            self.tokens.append((kind, m.group(kind)))
        self.at = 0
        self.columns = columns
        self.sql = sql

    def _peek(self, upper: bool = True) -> str:
        if self.at >= len(self.tokens):
            return ""
        kind, value = self.tokens[self.at]
        return value.upper() if upper and kind == "word" else value

    def _take(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise _sqlite("incomplete input", self.sql)
        token = self.tokens[self.at]
        self.at += 1
        return token

    def _error(self, near: str) -> ProviderError:
        if near.startswith(("'", '"')):
            return _sqlite(f'unrecognized token: "{near}"', self.sql)  # an unterminated string
        return _sqlite(f'near "{near}": syntax error', self.sql)

    def parse(self) -> Callable[[Row], bool | None]:
        expr = self._or()
        if self.at < len(self.tokens):
            raise self._error(self.tokens[self.at][1])
        return expr

    def _or(self) -> Callable[[Row], bool | None]:
        left = self._and()
        while self._peek() == "OR":
            self._take()
            right = self._and()
            left = (lambda a, b: lambda r: _or3(a(r), b(r)))(left, right)
        return left

    def _and(self) -> Callable[[Row], bool | None]:
        left = self._not()
        while self._peek() == "AND":
            self._take()
            right = self._not()
            left = (lambda a, b: lambda r: _and3(a(r), b(r)))(left, right)
        return left

    def _not(self) -> Callable[[Row], bool | None]:
        if self._peek() == "NOT":
            self._take()
            inner = self._not()
            return lambda r: None if (v := inner(r)) is None else not v
        return self._term()

    def _operand(self) -> Callable[[Row], Value]:
        kind, value = self._take()
        if kind == "str":
            text = value[1:-1].replace("''", "'")
            return lambda r: text
        if kind == "num":
            number = float(value) if "." in value else int(value)
            return lambda r: number
        if kind == "word" and value.upper() == "NULL":
            return lambda r: None
        if kind == "word" and value.upper() not in _KEYWORDS:
            if value not in self.columns:
                raise _sqlite(f"no such column: {value}", self.sql)
            return lambda r: r.get(value)
        raise self._error(value)

    def _term(self) -> Callable[[Row], bool | None]:
        if self._peek() == "(":
            self._take()
            inner = self._or()
            if self._peek() != ")":
                raise self._error(self._peek(False) or ")")
            self._take()
            return inner
        left = self._operand()
        op = self._peek()
        if op == "IS":
            self._take()
            negate = self._peek() == "NOT"
            if negate:
                self._take()
            if self._peek() != "NULL":
                raise self._error(self._peek(False) or "IS")
            self._take()
            return lambda r: (left(r) is None) != negate
        negate = op == "NOT"
        if negate:
            self._take()
            op = self._peek()
        if op == "LIKE":
            self._take()
            pattern = self._operand()
            return lambda r: _not3(_like(left(r), pattern(r)), negate)
        if negate or op not in _COMPARE:
            raise self._error(self._peek(False) or "end of input")
        self._take()
        right = self._operand()
        compare = _COMPARE[op]
        return lambda r: _compare(left(r), right(r), compare)


_KEYWORDS = {"AND", "OR", "NOT", "LIKE", "IS", "NULL", "IN", "BETWEEN", "GLOB", "SELECT", "FROM", "WHERE"}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _and3(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or3(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _not3(value: bool | None, negate: bool) -> bool | None:
    return None if value is None else value != negate


def _compare(a: Value, b: Value, op: Callable[[Any, Any], bool]) -> bool | None:
    if a is None or b is None:
        return None
    # SQLite affinity, roughly: a number compared with a numeric text compares as numbers.
    if isinstance(a, int | float) != isinstance(b, int | float):
        try:
            a, b = float(a), float(b)
        except ValueError:
            a, b = str(a), str(b)
    return bool(op(a, b))


def _like(value: Value, pattern: Value) -> bool | None:
    if value is None or pattern is None:
        return None
    regex = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in str(pattern))
    # SQLite's LIKE folds ASCII case only.
    return re.fullmatch(regex, str(value), re.IGNORECASE | re.ASCII | re.DOTALL) is not None


_COLLATIONS = ("BINARY", "NOCASE", "RTRIM", "LOCALIZED", "UNICODE")
"""SQLite's collations and the two Android registers (LOCALIZED, UNICODE; here ordered as code points)."""


def _sorted(rows: list[Row], sort: str, columns: tuple[str, ...], sql: str) -> list[Row]:
    keys: list[tuple[str, bool, bool]] = []
    for part in sort.split(","):
        words = part.split()
        column, rest = (words[0], [w.upper() for w in words[1:]]) if words else ("", [])
        nocase = False
        if rest[:1] == ["COLLATE"]:
            if len(rest) < 2 or rest[1] not in _COLLATIONS:
                raise _sqlite(f"no such collation sequence: {words[2]}" if len(rest) > 1 else
                              'near "COLLATE": syntax error', sql)
            nocase, rest = rest[1] == "NOCASE", rest[2:]
        if not column or len(rest) > 1 or rest and rest[0] not in ("ASC", "DESC"):
            raise _sqlite(f'near "{words[-1] if words else ","}": syntax error', sql)
        if column not in columns:
            raise _sqlite(f"no such column: {column}", sql)
        keys.append((column, rest == ["DESC"], nocase))
    for name, descending, nocase in reversed(keys):
        # SQLite orders NULL first, then numbers, then text; Python's sort is stable, so keys apply last to first.
        rows = sorted(rows, key=_order_by(name, nocase), reverse=descending)
    return rows


def _order_by(name: str, nocase: bool) -> Callable[[Row], tuple[int, float, str]]:
    def key(row: Row) -> tuple[int, float, str]:
        value = row.get(name)
        # NOCASE folds ASCII letters only.
        return _order_key(value.translate(_ASCII_LOWER) if nocase and isinstance(value, str) else value)

    return key


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _order_key(value: Value) -> tuple[int, float, str]:
    if value is None:
        return (0, 0.0, "")
    if isinstance(value, int | float):
        return (1, float(value), "")
    return (2, 0.0, value)

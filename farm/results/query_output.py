"""What `farm query` prints: the result of one SELECT as a JSON object, CSV, or tab-separated text.

DuckDB hands back Python values of many types (Decimal, datetime, UUID, bytes, nested lists and
structs, NaN). Each becomes a JSON value here, once, so every format shows the same thing and the JSON
is strict (no NaN or Infinity, which many parsers refuse).
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import io
import math
import uuid
from collections.abc import Sequence
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

QueryFormat = Literal["table", "csv", "json"]
FORMATS: tuple[QueryFormat, ...] = ("table", "csv", "json")


class QueryResult(BaseModel):
    """The result of `farm query --json`: column names, and rows in that column order."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str]
    """Column names as the SELECT named them (two columns may share a name)."""
    rows: list[list[JsonValue]]
    """One list per row; numbers stay numbers, NULL is null, times are ISO 8601 text, NaN and infinities are the
    text `NaN`, `Infinity`, `-Infinity`, bytes are base64 text, lists and structs stay nested."""


def json_value(value: object) -> JsonValue:
    """One DuckDB value as a strict JSON value (see `QueryResult.rows`)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            return json_value(float(value))
        # A whole decimal (a SUM of integers) stays an exact integer, however large.
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_value(v) for v in value]
    return str(value)


def query_result(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> QueryResult:
    """The model of a query's result."""
    return QueryResult(columns=list(columns), rows=[[json_value(v) for v in row] for row in rows])


def cell_text(value: JsonValue) -> str:
    """A value as one cell of text: NULL is empty, nested values are compact JSON."""
    import json

    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def to_csv(result: QueryResult) -> str:
    """RFC 4180 CSV with a header line (quoted where a cell holds a comma, quote or line break)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    for row in result.rows:
        writer.writerow([cell_text(v) for v in row])
    return out.getvalue()


def tsv_cell(text: str) -> str:
    """A cell of tab-separated text: tabs, line breaks and backslashes escaped, so each row stays one line."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\r", "\\r").replace("\n", "\\n")


def to_tsv(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A header line and one line per row, cells separated by tabs (see `tsv_cell`)."""
    lines = ["\t".join(tsv_cell(c) for c in columns)]
    lines += ["\t".join(tsv_cell(c) for c in row) for row in rows]
    return "\n".join(lines) + "\n"

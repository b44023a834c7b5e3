"""The record's columns in DuckDB, derived from `Record`, and the report's flattening of them.

`Record` is the one place a record's shape is written: the DuckDB type of each column is computed from its
fields (`RECORD_COLUMNS`), so adding a field to `Record` adds its column. The report's columns (`REPORT_SELECT`)
are an explicit choice of what to show and how to flatten it; each names the field it reads, and its type and
the fields a report reads are derived from that.
"""

from __future__ import annotations

import types
from typing import Annotated, Literal, NamedTuple, Union, get_args, get_origin

from pydantic import BaseModel, JsonValue

from farm.results.record import Record

_SCALARS: dict[type, str] = {str: "VARCHAR", int: "BIGINT", float: "DOUBLE", bool: "BOOLEAN"}


def _bare(annotation: object, where: str) -> object:
    """`annotation` without `Annotated[…]` metadata and without an optional `| None`."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is Union or origin is types.UnionType:
            rest = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(rest) != 1:
                raise TypeError(f"{where}: {annotation} is a union of types, which no DuckDB column holds")
            annotation = rest[0]
        else:
            return annotation


def _model(annotation: object) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def sql_type(annotation: object, where: str) -> str:
    """The DuckDB type of a field annotated `annotation` (`where` names the field in the error).

    str → VARCHAR, int → BIGINT, float → DOUBLE, bool → BOOLEAN, a Literal of one of those → its type, a list of
    those → `T[]`, a model → STRUCT of its fields in order, a dict, a JsonValue or a list of models → JSON;
    Optional and Annotated unwrap. Anything else is a TypeError: a field no column can hold.
    """
    bare = _bare(annotation, where)
    origin = get_origin(bare)
    if isinstance(bare, type) and bare in _SCALARS:
        return _SCALARS[bare]
    if origin is Literal:
        kinds = {type(value) for value in get_args(bare)}
        if len(kinds) == 1 and (kind := kinds.pop()) in _SCALARS:
            return _SCALARS[kind]
        raise TypeError(f"{where}: {bare} mixes value types or holds non-scalar values")
    if (model := _model(bare)) is not None:
        return struct_type(model, where)
    if origin is list:
        (item,) = get_args(bare)
        if _model(_bare(item, where)) is not None:
            return "JSON"
        element = sql_type(item, f"{where}[]")
        if element not in _SCALARS.values():
            raise TypeError(f"{where}: a list of {element} has no DuckDB column here")
        return f"{element}[]"
    if origin is dict or bare is JsonValue:
        return "JSON"
    raise TypeError(f"{where}: {annotation} has no DuckDB column type")


def struct_type(model: type[BaseModel], where: str) -> str:
    """`STRUCT(field TYPE, …)` of a model's fields, in order."""
    members = ", ".join(f"{name} {sql_type(f.annotation, f'{where}.{name}')}" for name, f in model.model_fields.items())
    return f"STRUCT({members})"


def model_columns(model: type[BaseModel]) -> dict[str, str]:
    """Column name → DuckDB type, one per field of `model`, in field order."""
    return {name: sql_type(f.annotation, f"{model.__name__}.{name}") for name, f in model.model_fields.items()}


RECORD_COLUMNS: dict[str, str] = model_columns(Record)
"""The DuckDB type of each `Record` field: what record files are read as."""


class ReportColumn(NamedTuple):
    """One column of the report's flattening of a record, and the record field it reads."""

    name: str
    """Column name (in `rec`)."""
    field: str
    """The `Record` field it reads."""
    member: str = ""
    """The member of a model field it reads (`device_verdict.outcome`); empty: the field itself."""
    first: bool = False
    """Only the first element of a list field (`reasons[1]`)."""
    default: str = ""
    """SQL literal read when the value is missing (records written before the field existed); empty: NULL."""

    @property
    def sql(self) -> str:
        """The expression over a record that computes the column."""
        expr = self.field + (f".{self.member}" if self.member else "") + ("[1]" if self.first else "")
        return f"coalesce({expr}, {self.default})" if self.default else expr


def _plain(*names: str) -> tuple[ReportColumn, ...]:
    return tuple(ReportColumn(name, name) for name in names)


def _members(field: str, *members: str, prefix: str = "") -> tuple[ReportColumn, ...]:
    return tuple(ReportColumn(prefix + member, field, member) for member in members)


REPORT_SELECT: tuple[ReportColumn, ...] = (
    *_plain("run", "lane", "device", "task_id"),
    ReportColumn("instance", "instance", default="''"), ReportColumn("repeat", "repeat", default="1"),
    *_plain("category", "partition", "expect", "outcome", "end_reason", "passed", "answer"),
    ReportColumn("reason", "reasons", first=True),  # only the first reason is ever shown
    *_plain("failure_category", "takeover_kind"),
    *_members("metrics", "first_feedback_ms", "round_trips", "model_ms", "screen_read_ms", "action_ms", "other_ms",
              "total_ms"),
    *_members("tokens", "input_new", "cache_read", "cache_write", "output"),
    *_plain("cost_usd", "attempt"),
    *_members("device_verdict", "outcome", "passed", "failure_category", prefix="dv_"),
    *_plain("execution", "split", "markers", "evidence", "started_at", "ended_at"),
)
"""What reports read, flattened: one column each (`rec`'s columns, in order)."""


def column_type(model: type[BaseModel], column: ReportColumn) -> str:
    """The DuckDB type of a report column over `model`: its field's type, narrowed to the member or element."""
    where = f"{model.__name__}.{column.field}"
    annotation = model.model_fields[column.field].annotation
    if column.member:
        nested = _model(_bare(annotation, where))
        if nested is None:
            raise TypeError(f"{where}: not a model, so it has no member {column.member!r}")
        where, annotation = f"{where}.{column.member}", nested.model_fields[column.member].annotation
    if column.first:
        items = _bare(annotation, where)
        if get_origin(items) is not list:
            raise TypeError(f"{where}: not a list, so it has no first element")
        where, annotation = f"{where}[1]", get_args(items)[0]
    return sql_type(annotation, where)


REPORT_READ: tuple[str, ...] = tuple(dict.fromkeys(column.field for column in REPORT_SELECT))
"""The `Record` fields the report columns read, in column order."""
_REPORT_TYPES: dict[str, str] = {column.name: column_type(Record, column) for column in REPORT_SELECT}


def report_type(column: str) -> str:
    """The SQL type of a REPORT_SELECT column."""
    return _REPORT_TYPES[column]

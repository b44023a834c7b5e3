"""The record's columns in DuckDB, derived from `Record`, and the report's flattening of them.

`Record` is the one place a record's shape is written: the DuckDB type of each column is computed from its
fields (`RECORD_COLUMNS`), so adding a field to `Record` adds its column, and the range of each bounded number
from the field's declared constraints (`RECORD_BOUNDS`), so the SQL reader refuses what the model refuses.
The report's columns (`REPORT_SELECT`) are an explicit choice of what to show and how to flatten it; each names
the field it reads, and its type and the fields a report reads are derived from that.
"""

from __future__ import annotations

import types
from typing import Annotated, Literal, NamedTuple, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, JsonValue
from pydantic.fields import FieldInfo

from farm.results.record import Record, TokenCount

_SCALARS: dict[type, str] = {str: "VARCHAR", int: "BIGINT", float: "DOUBLE", bool: "BOOLEAN"}


def _peel(annotation: object, where: str) -> tuple[object, list[object]]:
    """`annotation` without `Annotated[…]` metadata and without an optional `| None`, and that metadata."""
    metadata: list[object] = []
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *extra = get_args(annotation)
            metadata.extend(extra)
        elif origin is Union or origin is types.UnionType:
            rest = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(rest) != 1:
                raise TypeError(f"{where}: {annotation} is a union of types, which no DuckDB column holds")
            annotation = rest[0]
        else:
            return annotation, metadata


def _bare(annotation: object, where: str) -> object:
    """`annotation` without `Annotated[…]` metadata and without an optional `| None`."""
    return _peel(annotation, where)[0]


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


Number = int | float


class Bound(NamedTuple):
    """The declared range of one number in a record (a field, or a member of a model field): what the model
    refuses outside of, so what the SQL reader refuses too."""

    path: tuple[str, ...]
    """The field, then the members down to the number (`("metrics", "total_ms")`)."""
    lower: Number | None
    """Least value allowed (inclusive); None: no lower bound."""
    upper: Number | None
    """Greatest value allowed (inclusive); None: no upper bound."""

    @property
    def name(self) -> str:
        """The dotted path (`metrics.total_ms`), also its SQL path in a STRUCT column."""
        return ".".join(self.path)

    @property
    def default(self) -> Number:
        """What a missing (null) value is checked as: a value inside the range (the lower bound when there is
        one), so an unknown number is never refused."""
        value = self.lower if self.lower is not None else self.upper
        assert value is not None, self.name  # a Bound has at least one bound
        return value


CHECKED_ON_ENTRY: dict[str, object] = {"tokens": TokenCount}
"""`Record` fields whose model declares no bounds of its own, but whose every member `Record` range-checks when
it is read (`Record._tokens_in_range`: `Tokens.check_counts`), as this annotation."""


def _flat(metadata: list[object]) -> list[object]:
    out: list[object] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            out.extend(_flat(list(item.metadata)))
        elif isinstance(item, annotated_types.GroupedMetadata):  # Interval(ge=…, le=…)
            out.extend(_flat(list(item)))
        else:
            out.append(item)
    return out


def _number(value: object, where: str) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{where}: bound {value!r} is not a number")
    return value


def _range(kind: object, metadata: list[object], where: str) -> tuple[Number | None, Number | None]:
    """The inclusive (lower, upper) bounds `metadata` declares on a number of type `kind`; the tightest wins."""
    lows: list[Number] = []
    highs: list[Number] = []
    for item in _flat(metadata):
        if isinstance(item, annotated_types.Ge):
            lows.append(_number(item.ge, where))
        elif isinstance(item, annotated_types.Le):
            highs.append(_number(item.le, where))
        elif isinstance(item, annotated_types.Gt | annotated_types.Lt):
            if kind is not int:
                raise TypeError(f"{where}: a strict bound on a {kind} has no SQL range check; declare ge/le")
            if isinstance(item, annotated_types.Gt):
                lows.append(_number(item.gt, where) + 1)
            else:
                highs.append(_number(item.lt, where) - 1)
    return (max(lows) if lows else None), (min(highs) if highs else None)


def _inside(annotation: object, where: str) -> bool:
    """Whether a list or dict item annotated `annotation` holds a bounded number (which no SQL check reaches)."""
    bare, metadata = _peel(annotation, where)
    if (model := _model(bare)) is not None:
        return bool(model_bounds(model, where))
    if get_origin(bare) in (list, dict):
        return any(_inside(arg, where) for arg in get_args(bare)[-1:])
    return any(bound is not None for bound in _range(bare, metadata, where))


def model_bounds(model: type[BaseModel], where: str = "", path: tuple[str, ...] = (),
                 entry: object = None) -> tuple[Bound, ...]:
    """Every number of `model`, and of the models in its fields, that declares a range (`Field(ge=…, le=…)`,
    directly or through an `Annotated` alias such as `Millis`), in field order. `entry`: the annotation every
    number of `model` is also checked as (`CHECKED_ON_ENTRY`).

    A bounded number inside a list or dict is a TypeError: no SQL range check reaches it.
    """
    where = where or model.__name__
    also = _peel(entry, where)[1] if entry is not None else []
    on_entry = CHECKED_ON_ENTRY if not path and issubclass(model, Record) else {}
    bounds: list[Bound] = []
    for name, f in model.model_fields.items():
        here, at = (*path, name), f"{where}.{name}"
        bare, metadata = _peel(f.annotation, at)
        if (nested := _model(bare)) is not None:
            bounds.extend(model_bounds(nested, at, here, on_entry.get(name)))
        elif (origin := get_origin(bare)) in (list, dict):
            if any(_inside(arg, at) for arg in get_args(bare)[-1:]):
                raise TypeError(f"{at}: a bounded number inside a {origin.__name__} has no SQL range check")
        elif bare in (int, float):
            lower, upper = _range(bare, [*f.metadata, *metadata, *also], at)
            if lower is not None or upper is not None:
                bounds.append(Bound(here, lower, upper))
    return tuple(bounds)


RECORD_BOUNDS: tuple[Bound, ...] = model_bounds(Record)
"""The declared range of every bounded number of `Record` (`cost_usd`, `metrics.total_ms`, `tokens.output`…):
what a record file's SQL reader checks, as the Python reader does."""


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
    keep: str = ""
    """Only the elements of a list of models for which this SQL condition over `x` (one element, a STRUCT of the
    model's fields) holds (`x.passed IS NOT TRUE`: the checks that did not pass); empty: the whole field."""

    @property
    def sql(self) -> str:
        """The expression over a record that computes the column."""
        expr = self.field + (f".{self.member}" if self.member else "") + ("[1]" if self.first else "")
        if self.keep:
            # A list of models is read as JSON, and stays JSON; an element of another shape reads as NULLs.
            element = _kept_element(Record, self)
            expr = f"CAST(list_filter(TRY_CAST({expr} AS {element}[]), lambda x: {self.keep}) AS JSON)"
        return f"coalesce({expr}, {self.default})" if self.default else expr


def _plain(*names: str) -> tuple[ReportColumn, ...]:
    return tuple(ReportColumn(name, name) for name in names)


def _members(field: str, *members: str, prefix: str = "") -> tuple[ReportColumn, ...]:
    return tuple(ReportColumn(prefix + member, field, member) for member in members)


REPORT_SELECT: tuple[ReportColumn, ...] = (
    *_plain("run", "lane", "device", "task_id"),
    ReportColumn("instance", "instance", default="''"), ReportColumn("repeat", "repeat", default="1"),
    *_plain("category", "partition", "expect", "outcome", "end_reason", "passed", "answer"),
    ReportColumn("reason", "reasons", first=True),  # the first reason: what a row's "reason" cell shows
    ReportColumn("reasons", "reasons"),  # every reason: why a unit did not pass, in full (farm.report.why)
    ReportColumn("failing_checks", "checks", keep="x.passed IS NOT TRUE"),  # failed and unjudged checks
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
    if column.keep:
        _kept_element(model, column)
    return sql_type(annotation, where)


def _kept_element(model: type[BaseModel], column: ReportColumn) -> str:
    """The STRUCT type of an element of the list of models a `keep` column filters."""
    where = f"{model.__name__}.{column.field}"
    items = _bare(model.model_fields[column.field].annotation, where)
    element = _model(_bare(get_args(items)[0], where)) if get_origin(items) is list else None
    if element is None or column.member or column.first:
        raise TypeError(f"{where}: not a list of models, so it has no elements to keep")
    return struct_type(element, f"{where}[]")


REPORT_READ: tuple[str, ...] = tuple(dict.fromkeys(column.field for column in REPORT_SELECT))
"""The `Record` fields the report columns read, in column order."""
_REPORT_TYPES: dict[str, str] = {column.name: column_type(Record, column) for column in REPORT_SELECT}


def report_type(column: str) -> str:
    """The SQL type of a REPORT_SELECT column."""
    return _REPORT_TYPES[column]

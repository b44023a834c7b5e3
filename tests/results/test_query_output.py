"""`farm query` output: every DuckDB value as strict JSON, CSV that round-trips, tab-separated lines that stay lines."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from farm.results import duck
from farm.results.query_output import QueryResult, cell_text, json_value, query_result, to_csv, to_tsv
from tests.helpers.records import record, write_run


def _strict(text: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_duckdb_values_of_every_kind_become_strict_json(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [record("a", run="r")])
    con = duck.query_connection([run_dir])
    names, rows = duck.query(con, (
        "SELECT 1.50::DECIMAL(4,2) AS dec, 12345678901234567890::HUGEINT AS huge, 'nan'::DOUBLE AS nan,"
        " '-inf'::DOUBLE AS ninf, DATE '2026-12-01' AS d, TIMESTAMP '2026-12-01 03:00:00' AS ts,"
        " INTERVAL 90 SECOND AS iv, '\\xAA'::BLOB AS b, [1, NULL] AS l, {'k': 'v'} AS s, NULL AS n,"
        " 'd1a5c0f2-0000-4000-8000-000000000000'::UUID AS u, true AS t, task_id FROM records"
    ))
    result = query_result(names, rows)
    parsed = _strict(result.model_dump_json())
    assert parsed == {
        "columns": ["dec", "huge", "nan", "ninf", "d", "ts", "iv", "b", "l", "s", "n", "u", "t", "task_id"],
        "rows": [[1.5, 12345678901234567890, "NaN", "-Infinity", "2026-12-01", "2026-12-01T03:00:00", 90.0,
                  "qg==", [1, None], {"k": "v"}, None, "d1a5c0f2-0000-4000-8000-000000000000", True, "a"]],
    }
    assert QueryResult.model_validate(parsed) == result


def test_columns_sharing_a_name_are_all_kept() -> None:
    result = query_result(["n", "n"], [(1, 2)])
    assert _strict(result.model_dump_json()) == {"columns": ["n", "n"], "rows": [[1, 2]]}


def test_csv_quotes_what_needs_quoting_and_reads_back() -> None:
    result = query_result(["id", "answer"], [("a", 'say "hi", then\nleave'), ("b", None)])
    text = to_csv(result)
    assert list(csv.reader(io.StringIO(text))) == [["id", "answer"], ["a", 'say "hi", then\nleave'], ["b", ""]]


@pytest.mark.parametrize(("value", "text"), [
    (None, ""), (True, "true"), ([1, "x"], '[1,"x"]'), ({"k": "中"}, '{"k":"中"}'), (2.5, "2.5"), ("x", "x"),
])
def test_a_cell_as_text(value: object, text: str) -> None:
    assert cell_text(json_value(value)) == text


def test_tab_separated_rows_stay_one_line_each() -> None:
    text = to_tsv(["id", "note"], [["a", "tab\there"], ["b", "two\nlines\\ and \r"]])
    assert text.splitlines() == ["id\tnote", "a\ttab\\there", "b\ttwo\\nlines\\\\ and \\r"]

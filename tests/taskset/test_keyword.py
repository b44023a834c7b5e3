"""`-k EXPR`: the parser and matcher, including expressions that must be refused."""

from __future__ import annotations

import pytest

from farm.errors import FarmError
from farm.taskset.keyword import MAX_CHARS, MAX_DEPTH, KeywordError, parse_keyword, tokenize

NAMES = {
    "calc-add": ("calc-add", "read/content", "read"),
    "calc-sub-holdout": ("calc-sub-holdout", "read/content", "read"),
    "notes-new": ("notes-new", "write", "write"),
    "sandbox-and-more": ("sandbox-and-more", "write", "write"),
    "zz-1": ("zz-1", "not", "read"),
}


def chosen(expr: str) -> list[str]:
    parsed = parse_keyword(expr)
    return sorted(tid for tid, names in NAMES.items() if parsed.matches(names))


def test_a_word_matches_a_substring_of_the_id_directory_or_category_case_insensitively() -> None:
    assert chosen("CALC") == ["calc-add", "calc-sub-holdout"]
    assert chosen("content") == ["calc-add", "calc-sub-holdout"]
    assert chosen("write") == ["notes-new", "sandbox-and-more"]


def test_not_binds_tighter_than_and_which_binds_tighter_than_or() -> None:
    assert chosen("calc and not holdout") == ["calc-add"]
    assert chosen("notes or calc and add") == ["calc-add", "notes-new"]
    assert chosen("(notes or calc) and add") == ["calc-add"]
    assert chosen("not not notes") == ["notes-new"]
    assert chosen("not (calc or write)") == ["zz-1"]


def test_an_id_containing_an_operator_word_is_one_word() -> None:
    assert chosen("sandbox-and-more") == ["sandbox-and-more"]
    assert [t.kind for t in tokenize("sandbox-and-more or x")] == ["word", "or", "word"]


def test_a_quoted_operator_is_a_word() -> None:
    # The directory `not/` is reachable only by quoting: bare `not` is the operator.
    assert chosen('"not"') == ["notes-new", "zz-1"]
    assert chosen("'not' and not notes") == ["zz-1"]
    assert chosen("'and'") == ["sandbox-and-more"]


def test_operators_are_lowercase_only_like_pytest() -> None:
    assert chosen("AND") == ["sandbox-and-more"]
    assert chosen("NOT") == ["notes-new", "zz-1"]


def test_a_long_chain_of_or_is_flat_not_deep() -> None:
    expr = " or ".join(f"w{i}" for i in range(200)) + " or calc-add"
    assert len(expr) < MAX_CHARS and chosen(expr) == ["calc-add"]


@pytest.mark.parametrize(("expr", "problem"), [
    ("", "empty expression"),
    ("   ", "empty expression"),
    ("not", "expected a word at the end"),
    ("and", "expected a word at column 1 ('and')"),
    ("calc and", "expected a word at the end"),
    ("calc or or notes", "expected a word at column 9 ('or')"),
    ("(calc", "'(' at column 1 is never closed"),
    ("(calc or (notes)", "'(' at column 1 is never closed"),
    ("calc)", "unmatched ')' at column 5"),
    ("()", "expected a word at column 2 (')')"),
    ("calc notes", "expected and / or at column 6 ('notes')"),
    ("'calc", "unterminated quote at column 1"),
    ("calc and \"not", "unterminated quote at column 10"),
    ("''", "empty quoted word at column 1"),
    ("(" * (MAX_DEPTH + 2) + "a" + ")" * (MAX_DEPTH + 2), f"nested deeper than {MAX_DEPTH} levels"),
    ("not " * (MAX_DEPTH + 2) + "a", f"nested deeper than {MAX_DEPTH} levels"),
    ("a" * (MAX_CHARS + 1), f"longer than {MAX_CHARS} characters"),
    # Never evaluated as code: this is words and parentheses without operators between them.
    ("__import__('os').system('true')", "expected and / or at column 11 ('(')"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_a_malformed_expression_is_one_line_naming_the_problem(expr: str, problem: str) -> None:
    with pytest.raises(KeywordError) as caught:
        parse_keyword(expr)
    line = caught.value.line()
    assert isinstance(caught.value, FarmError) and caught.value.exit_code == 2
    assert line.startswith("-k ") and problem in line, line
    assert "\n" not in line and "quote a word that is an operator" in line

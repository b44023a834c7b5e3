"""`-k EXPR`: choose tasks by words found in their id or category, pytest style.

A word matches a task when it occurs, case-insensitively, in the task's id, its directory
(`read/system`) or its category field (`read`). Words combine with `and`, `or`, `not` and
parentheses (`not` binds tightest, then `and`, then `or`). A word that is itself an operator, or
holds spaces or parentheses, is written in quotes: `-k '"not"'`. The expression is parsed here,
never evaluated as code; a malformed one is a one-line FarmError naming the column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from farm.errors import FarmError

MAX_CHARS = 2000
"""Longest expression accepted (a shell line of task ids, with room to spare)."""
MAX_DEPTH = 64
"""Deepest nesting of parentheses and `not` (evaluation recurses once per level)."""
HINT = ("join words with and / or / not and parentheses, e.g. -k 'calculator and not percent'; "
        "quote a word that is an operator: -k '\"not\"'")
OPERATORS = ("and", "or", "not")

TokenKind = Literal["word", "and", "or", "not", "(", ")"]


class KeywordError(FarmError):
    """A malformed `-k` expression."""

    def __init__(self, expr: str, problem: str) -> None:
        super().__init__(f"-k {expr!r}: {problem}", hint=HINT)


@dataclass(frozen=True)
class Token:
    """One token and the column (1-based) it starts at."""

    kind: TokenKind
    text: str
    column: int


@dataclass(frozen=True)
class Word:
    """A substring to look for."""

    text: str

    def matches(self, names: Sequence[str]) -> bool:
        """Whether the word occurs in any of the names (case-insensitive)."""
        needle = self.text.casefold()
        return any(needle in name.casefold() for name in names)


@dataclass(frozen=True)
class Not:
    """The operand does not match."""

    operand: Expr

    def matches(self, names: Sequence[str]) -> bool:
        """Whether the operand does not match."""
        return not self.operand.matches(names)


@dataclass(frozen=True)
class AllOf:
    """Every part matches (`and`)."""

    parts: tuple[Expr, ...]

    def matches(self, names: Sequence[str]) -> bool:
        """Whether every part matches."""
        return all(p.matches(names) for p in self.parts)


@dataclass(frozen=True)
class AnyOf:
    """Some part matches (`or`)."""

    parts: tuple[Expr, ...]

    def matches(self, names: Sequence[str]) -> bool:
        """Whether some part matches."""
        return any(p.matches(names) for p in self.parts)


Expr = Word | Not | AllOf | AnyOf


def tokenize(expr: str) -> list[Token]:
    """The tokens of `expr`; KeywordError for an unterminated quote or an empty quoted word."""
    tokens: list[Token] = []
    i, n = 0, len(expr)
    while i < n:
        ch = expr[i]
        if ch.isspace():
            i += 1
        elif ch in "()":
            tokens.append(Token("(" if ch == "(" else ")", ch, i + 1))
            i += 1
        elif ch in "'\"":
            end = expr.find(ch, i + 1)
            if end < 0:
                raise KeywordError(expr, f"unterminated quote at column {i + 1}")
            if end == i + 1:
                raise KeywordError(expr, f"empty quoted word at column {i + 1}")
            tokens.append(Token("word", expr[i + 1:end], i + 1))
            i = end + 1
        else:
            start = i
            while i < n and not expr[i].isspace() and expr[i] not in "()":
                i += 1
            text = expr[start:i]
            kind: TokenKind = text if text in OPERATORS else "word"  # type: ignore[assignment]
            tokens.append(Token(kind, text, start + 1))
    return tokens


class _Parser:
    """Recursive descent over the tokens: or_expr := and_expr ('or' and_expr)*; and_expr := not_expr ('and'
    not_expr)*; not_expr := 'not' not_expr | '(' or_expr ')' | WORD."""

    def __init__(self, expr: str, tokens: list[Token]) -> None:
        self.expr = expr
        self.tokens = tokens
        self.pos = 0

    def _peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _fail(self, problem: str) -> KeywordError:
        tok = self._peek()
        where = f"at column {tok.column} ({tok.text!r})" if tok is not None else "at the end"
        return KeywordError(self.expr, f"{problem} {where}")

    def parse(self) -> Expr:
        result = self._or(0)
        if self._peek() is not None:
            tok = self._peek()
            assert tok is not None
            if tok.kind == ")":
                raise self._fail("unmatched ')'")
            raise self._fail("expected and / or")
        return result

    def _or(self, depth: int) -> Expr:
        parts = [self._and(depth)]
        while (tok := self._peek()) is not None and tok.kind == "or":
            self.pos += 1
            parts.append(self._and(depth))
        return parts[0] if len(parts) == 1 else AnyOf(tuple(parts))

    def _and(self, depth: int) -> Expr:
        parts = [self._not(depth)]
        while (tok := self._peek()) is not None and tok.kind == "and":
            self.pos += 1
            parts.append(self._not(depth))
        return parts[0] if len(parts) == 1 else AllOf(tuple(parts))

    def _not(self, depth: int) -> Expr:
        if depth > MAX_DEPTH:
            raise self._fail(f"nested deeper than {MAX_DEPTH} levels")
        tok = self._peek()
        if tok is None:
            raise self._fail("expected a word")
        if tok.kind == "not":
            self.pos += 1
            return Not(self._not(depth + 1))
        if tok.kind == "(":
            self.pos += 1
            inner = self._or(depth + 1)
            close = self._peek()
            if close is None or close.kind != ")":
                raise KeywordError(self.expr, f"'(' at column {tok.column} is never closed")
            self.pos += 1
            return inner
        if tok.kind == "word":
            self.pos += 1
            return Word(tok.text)
        raise self._fail("expected a word")


def parse_keyword(expr: str) -> Expr:
    """The parsed `-k` expression; KeywordError (exit 2) naming what is wrong and where."""
    if len(expr) > MAX_CHARS:
        raise KeywordError(expr[:40] + "…", f"longer than {MAX_CHARS} characters")
    tokens = tokenize(expr)
    if not tokens:
        raise KeywordError(expr, "empty expression")
    return _Parser(expr, tokens).parse()

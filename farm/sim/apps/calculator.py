"""Calculator: digit and operator keys, a formula line and a result line (exact arithmetic)."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

from farm.sim.apps.base import App, Frame, Node, button, grid, group, label

OPS = {"+": ("op_add", "plus"), "−": ("op_sub", "minus"), "×": ("op_mul", "multiply"), "÷": ("op_div", "divide")}
LAYOUT = [
    ["C", "⌫", "%", "÷"],
    ["7", "8", "9", "×"],
    ["4", "5", "6", "−"],
    ["1", "2", "3", "+"],
    [".", "0", "", "="],
]
_TYPED = {"-": "−", "*": "×", "x": "×", "X": "×", "/": "÷", "\n": "=", "\b": "⌫", "c": "C"}
PERCENT = Fraction(1, 100)


class CalcError(ValueError):
    """The formula cannot be evaluated; the message is what the result line shows."""


def evaluate(formula: str) -> Fraction:
    """Value of a formula of numbers, postfix % and + − × ÷ (usual precedence, leading minus allowed)."""
    tokens: list[str] = []
    num = ""
    for ch in formula:
        if ch.isdigit() or ch == ".":
            num += ch
            continue
        if ch == "%":
            if not num or num.endswith("%"):
                raise CalcError("格式错误")
            num += "%"
            continue
        if num:
            tokens.append(num)
            num = ""
        if ch == "−" and (not tokens or tokens[-1] in OPS):
            num = "-"
            continue
        tokens.append(ch)
    if num:
        tokens.append(num)
    if not tokens or tokens[-1] in OPS:
        raise CalcError("格式错误")
    try:
        values = [_number(tokens[0])]
        ops: list[str] = []
        for i in range(1, len(tokens), 2):
            op, operand = tokens[i], _number(tokens[i + 1])
            if op in "×÷":
                if op == "÷" and operand == 0:
                    raise CalcError("不能除以 0")
                values[-1] = values[-1] * operand if op == "×" else values[-1] / operand
            else:
                ops.append(op)
                values.append(operand)
    except CalcError:
        raise
    except (ValueError, IndexError, ZeroDivisionError) as exc:
        raise CalcError("格式错误") from exc
    total = values[0]
    for op, v in zip(ops, values[1:], strict=True):
        total = total + v if op == "+" else total - v
    return total


def _number(token: str) -> Fraction:
    """`12.5` → 12.5; `15%` → 0.15 (AOSP's percent is a postfix /100)."""
    if token.endswith("%"):
        return Fraction(token[:-1]) * PERCENT
    return Fraction(token)


def format_number(value: Fraction) -> str:
    """An exact integer as digits, anything else to 12 significant digits without trailing zeros."""
    if value.denominator == 1:
        return str(value.numerator).replace("-", "−")
    with localcontext() as ctx:
        ctx.prec = 12
        dec = Decimal(value.numerator) / Decimal(value.denominator)
    text = format(dec.normalize(), "f")
    return text.replace("-", "−")


class CalculatorApp(App):
    """AOSP Calculator look-alike (`com.android.calculator2:id/formula`, `…/result`, `…/digit_7`)."""

    package = "com.android.calculator2"
    activity = ".Calculator"
    formula = ""
    result = ""
    just_evaluated = False

    def press(self, key: str) -> None:
        """One key of the pad."""
        if key == "C":
            self.formula, self.result, self.just_evaluated = "", "", False
        elif key == "⌫":
            self.formula = "" if self.just_evaluated else self.formula[:-1]
            self.result, self.just_evaluated = "", False
        elif key == "=":
            if self.formula:
                try:
                    self.result = format_number(evaluate(self.formula))
                except CalcError as exc:
                    self.result = str(exc)
                self.just_evaluated = True
        elif key in OPS:
            if self.just_evaluated:
                # Continue from the result when it is a number (not an error message).
                self.formula = self.result if self.result.lstrip("−").replace(".", "").isdigit() else ""
            self.just_evaluated = False
            self.result = ""
            if self.formula and self.formula[-1] in OPS:
                self.formula = self.formula[:-1]
            if self.formula or key == "−":
                self.formula += key
        elif key == "%":
            if self.just_evaluated:
                self.formula = self.result if self.result.lstrip("−").replace(".", "").isdigit() else ""
            self.just_evaluated, self.result = False, ""
            if self.formula and (self.formula[-1].isdigit() or self.formula[-1] == "."):
                self.formula += "%"
        else:
            if self.just_evaluated:
                self.formula, self.result = "", ""
            self.just_evaluated = False
            self.formula += key

    def type_text(self, text: str) -> bool:
        for ch in text:
            key = _TYPED.get(ch, ch)
            if key in OPS or key in ("=", "⌫", "C", ".", "%") or key.isdigit():
                self.press(key)
        return True

    def view(self, frame: Frame) -> list[Node]:
        display = frame.take(220)
        left, top, right, bottom = display
        mid = top + (bottom - top) * 3 // 5
        formula = label((left, top, right, mid), self.formula, rid=self.rid("formula"))
        result = label((left, mid, right, bottom), self.result, rid=self.rid("result"))
        keys: list[Node] = []
        for r, cells in zip(LAYOUT, grid(frame.rest(), len(LAYOUT), 4), strict=True):
            for key, bounds in zip(r, cells, strict=True):
                if key:
                    keys.append(self._key(key, bounds))
        # The pad comes first in document order so `d(text="1")` finds the key, not a formula reading "1".
        return [
            group(frame.rest(), keys, cls="android.view.ViewGroup", rid=self.rid("pad_numeric")),
            group(display, [formula, result], cls="android.widget.LinearLayout", rid=self.rid("display")),
        ]

    def _key(self, key: str, bounds: tuple[int, int, int, int]) -> Node:
        if key.isdigit():
            rid, desc = f"digit_{key}", ""
        elif key in OPS:
            rid, desc = OPS[key]
        else:
            rid, desc = {"=": ("eq", "equals"), "C": ("clr", "clear"), "⌫": ("del", "delete"),
                         ".": ("dec_point", "point"), "%": ("op_pct", "percent")}[key]
        return button(bounds, key, lambda: self.press(key), rid=self.rid(rid), desc=desc)

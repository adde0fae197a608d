"""Spark's numeric type of a view's expressions, derived before the view is translated.

DuckDB divides DECIMALs into a DOUBLE where Spark keeps an exact DECIMAL (with its own
precision rules), so the DuckDB text of `a / b` depends on the Spark types of `a` and
`b`. Column types come from the relations the view reads (sqlglot resolves which column
is which); literals, casts and arithmetic follow Spark's rules (`DecimalPrecision`, with
`allowPrecisionLoss` and `literalPickMinimumPrecision` at their defaults), which
`tests/spark/test_view_types.py` checks against Spark's own `typeof`. Anything else is
unknown, and the translation then refuses decimals in DuckDB instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

MAX_PRECISION = 38
# the DECIMAL an integral type widens to when it meets a DECIMAL
_INTEGRAL_DIGITS = {
    exp.DataType.Type.TINYINT: 3,
    exp.DataType.Type.SMALLINT: 5,
    exp.DataType.Type.INT: 10,
    exp.DataType.Type.BIGINT: 20,
}
_FRACTIONAL = {exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE}
_META = "ducklake_column"
OPERANDS = "ducklake_operands"  # meta of a division or average: its operands' Spark types

# a relation's columns by schema and name, as sqlglot's schema mapping wants them
Columns = dict[str, dict[str, dict[str, str]]]


@dataclass(frozen=True)
class Number:
    """A Spark numeric type. An integral type carries the digits of the DECIMAL it widens
    to next to a DECIMAL (an integral literal: its own digit count, in `literal_digits`);
    FLOAT and DOUBLE are fractional."""

    kind: Literal["integral", "decimal", "fractional"]
    precision: int = 0
    scale: int = 0
    literal_digits: int | None = None

    def as_decimal(self) -> tuple[int, int]:
        return (self.literal_digits or self.precision, self.scale)


DOUBLE = Number("fractional")


def bounded(precision: int, scale: int) -> Number:
    """Spark's DECIMAL result type when the exact one needs more than 38 digits: keep the
    integer digits, give up scale down to 6."""
    if precision <= MAX_PRECISION:
        return Number("decimal", precision, scale)
    integer_digits = precision - scale
    kept_scale = max(MAX_PRECISION - integer_digits, min(scale, 6))
    return Number("decimal", MAX_PRECISION, kept_scale)


# the constructs whose DuckDB text depends on the Spark types of their operands
_TYPED = (exp.Div, exp.Mod, exp.IntDiv, exp.SafeDivide, exp.Avg, exp.Ceil, exp.Floor)
_UNARY = (exp.Avg, exp.Ceil, exp.Floor)


def annotate_operands(root: exp.Expression, columns: Columns, default_schema: str) -> None:
    """Record on each division and average of `root` (in its meta) the Spark types of
    its operands."""
    if not has_typed_operations(root):
        return
    typed = [n for n in root.walk() if isinstance(n, _TYPED)]
    types = _column_types(root, columns, default_schema)
    for node in typed:
        operands = [node.this] if isinstance(node, _UNARY) else [node.this, node.expression]
        node.meta[OPERANDS] = tuple(number_type(o, types) for o in operands)


def _column_types(
    root: exp.Expression, columns: Columns, default_schema: str
) -> dict[int, exp.DataType]:
    """Each column reference's type, keyed by a mark left on it: sqlglot resolves the
    references on a copy (qualifying it), and the marks survive the copy."""
    for n, column in enumerate(root.find_all(exp.Column)):
        column.meta[_META] = n
    resolved = resolved_copy(root, columns, default_schema, types=True) if columns else None
    if resolved is None:
        return {}  # every column unknown: divisions of them are refused for decimals
    found: dict[int, exp.DataType] = {}
    for column in resolved.find_all(exp.Column):
        mark = column.meta.get(_META)
        if mark is not None and column.type is not None:
            found[mark] = column.type
    return found


def resolved_copy(
    root: exp.Expression, columns: Columns, default_schema: str, *, types: bool = False
) -> exp.Expression | None:
    """A copy of `root` with every column resolved against the relations' `columns` and
    stars expanded (the stored text keeps its own), with types if asked; None when sqlglot
    cannot resolve it."""
    schema = MappingSchema(dict(columns), dialect="spark")
    try:
        resolved = qualify(
            root.copy(),
            schema=schema,
            db=default_schema,
            dialect="spark",
            expand_stars=True,
            validate_qualify_columns=False,
            quote_identifiers=False,
        )
        return annotate_types(resolved, schema=schema, dialect="spark") if types else resolved
    except SqlglotError:
        return None


def has_typed_operations(root: exp.Expression) -> bool:
    """Whether the DuckDB text of `root` depends on Spark types (`annotate_operands`)."""
    return root.find(*_TYPED) is not None


def number_type(node: exp.Expression, columns: dict[int, exp.DataType]) -> Number | None:
    """The Spark numeric type of `node`, or None when it is not known here."""
    if isinstance(node, exp.Paren | exp.Abs):
        return number_type(node.this, columns)
    if isinstance(node, exp.Neg):  # -2 keeps a literal's minimum precision
        return number_type(node.this, columns)
    if isinstance(node, exp.Literal):
        return _literal(node)
    if isinstance(node, exp.Column):
        mark = node.meta.get(_META)
        return _of_data_type(columns[mark]) if mark in columns else None
    if isinstance(node, exp.Cast):  # TRY_CAST included; sqlglot reads 2L as a cast
        cast_to = _of_data_type(node.args["to"])
        literal = _literal(node.this) if isinstance(node.this, exp.Literal) else None
        if cast_to and literal and cast_to.kind == literal.kind == "integral":
            return Number("integral", cast_to.precision, literal_digits=literal.literal_digits)
        return cast_to
    if isinstance(node, exp.Count):
        return Number("integral", 20)
    if isinstance(node, exp.Avg | exp.Sum | exp.Max | exp.Min):
        argument = number_type(node.this, columns)
        return None if argument is None else aggregate(type(node), argument)
    if isinstance(node, exp.Add | exp.Sub | exp.Mul | exp.Div | exp.Mod | exp.IntDiv):
        left = number_type(node.this, columns)
        right = number_type(node.expression, columns)
        if left is None or right is None:
            return None
        return arithmetic(type(node), left, right)
    return None


def arithmetic(op: type[exp.Expression], left: Number, right: Number) -> Number:
    """The type Spark gives `left <op> right`."""
    if op is exp.IntDiv:
        return Number("integral", 20)  # `div` is a BIGINT
    if "fractional" in (left.kind, right.kind):
        return DOUBLE
    if left.kind == right.kind == "integral":
        if op is exp.Div:
            return DOUBLE
        return Number("integral", max(left.precision, right.precision))
    (p1, s1), (p2, s2) = left.as_decimal(), right.as_decimal()
    if op is exp.Mul:
        return bounded(p1 + p2 + 1, s1 + s2)
    if op is exp.Div:
        scale = max(6, s1 + p2 + 1)
        return bounded(p1 - s1 + s2 + scale, scale)
    if op is exp.Mod:
        scale = max(s1, s2)
        return bounded(min(p1 - s1, p2 - s2) + scale, scale)
    scale = max(s1, s2)  # + and -
    return bounded(max(p1 - s1, p2 - s2) + scale + 1, scale)


def aggregate(op: type[exp.Expression], argument: Number) -> Number:
    """The type Spark gives avg / sum / min / max of `argument`."""
    if op is exp.Avg:
        if argument.kind != "decimal":
            return DOUBLE
        return bounded(argument.precision + 4, argument.scale + 4)
    if op is exp.Sum:
        if argument.kind == "decimal":
            return bounded(argument.precision + 10, argument.scale)
        return DOUBLE if argument.kind == "fractional" else Number("integral", 20)
    return Number(argument.kind, argument.precision, argument.scale)


def _of_data_type(data_type: exp.DataType) -> Number | None:
    kind = data_type.this
    if kind in _INTEGRAL_DIGITS:
        return Number("integral", _INTEGRAL_DIGITS[kind])
    if kind in _FRACTIONAL:
        return DOUBLE
    if kind == exp.DataType.Type.DECIMAL:
        params = [int(p.this.name) for p in data_type.expressions]
        precision = params[0] if params else 10  # Spark's DECIMAL means DECIMAL(10, 0)
        scale = params[1] if len(params) > 1 else 0
        return Number("decimal", precision, scale)
    return None


def _literal(node: exp.Literal) -> Number | None:
    if node.is_string:
        return None
    text = node.this.lower()
    if "e" in text:
        return DOUBLE  # 1e3 is a DOUBLE in Spark
    if "." not in text:
        digits = len(text.lstrip("0")) or 1
        value = int(text)
        if value > 2**63 - 1:
            return Number("decimal", digits, 0)
        width = 10 if value <= 2**31 - 1 else 20  # an INT or a BIGINT
        return Number("integral", width, literal_digits=digits)
    whole, fraction = text.split(".")
    unscaled = (whole + fraction).lstrip("0")
    scale = len(fraction)
    return Number("decimal", max(len(unscaled) or 1, scale), scale)

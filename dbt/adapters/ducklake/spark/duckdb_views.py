"""The DuckDB text of a view written here in Spark SQL, with Spark's meaning.

A view's DuckDB text (what DuckDB reads from `ducklake_view`) comes from sqlglot's
Spark-to-DuckDB translation, which aims at readable SQL, not identical results: it turns
Spark's CAST (ANSI: fails on bad input) into TRY_CAST, lets DuckDB round where Spark
truncates, returns TIMESTAMPs where Spark returns DATEs, and so on. This module rewrites
the constructs whose translation was checked against both engines
(`tests/spark/test_view_meaning.py`); a construct with no faithful DuckDB form becomes a
DuckDB `error()` naming it, so DuckDB refuses to read the view rather than answering
differently. Spark keeps reading the view from its own text. Rules for Spark's built-in
functions are in `duckdb_functions` (and `duckdb_edges`, for the edges of functions
whose everyday form is sqlglot's).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timezone
from typing import Any, cast

import sqlglot
from sqlglot import exp

from ..lake import iso_datetime
from .duckdb_edges import EDGE_RULES
from .duckdb_functions import ANONYMOUS_RULES, FUNCTION_RULES, spark_forms, unsupported
from .duckdb_functions import error_call as _error
from .duckdb_kinds import duckdb_kind, mark
from .view_functions import unchecked_function
from .view_types import OPERANDS, Columns, Number, aggregate, annotate_operands, arithmetic

_INTEGRAL = {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT}
_INTEGRAL |= {exp.DataType.Type.INT, exp.DataType.Type.BIGINT}

# Spark trunc / date_trunc units, as DuckDB spells them
_UNITS = {
    "YEAR": "year",
    "YYYY": "year",
    "YY": "year",
    "QUARTER": "quarter",
    "MONTH": "month",
    "MM": "month",
    "MON": "month",
    "WEEK": "week",
    "DAY": "day",
    "DD": "day",
    "HOUR": "hour",
    "MINUTE": "minute",
    "SECOND": "second",
    "MILLISECOND": "millisecond",
    "MICROSECOND": "microsecond",
}

# Spark functions with no faithful DuckDB equivalent: what the error names
_UNSUPPORTED: dict[type[exp.Expression], str] = {
    exp.SafeAdd: "try_add",
    exp.FromJson: "from_json",
    exp.ApproxQuantile: "percentile_approx (a different approximation)",
    exp.Flatten: "flatten (NULL elements)",
    exp.Corr: "corr (a one-row group is NULL in Spark, NaN in DuckDB)",
}


def duckdb_view_sql(
    query: exp.Expression, columns: Columns | None = None, default_schema: str = "main"
) -> str:
    """The DuckDB text to store for a view whose Spark query is `query`; `columns` are the
    Spark types of the relations it reads (divisions of DECIMALs depend on them).

    Children are rewritten before their parents (reversed pre-order), so a rule sees
    operands that are already DuckDB's; each node of the Spark tree is visited once.
    """
    root = spark_forms(query.copy())
    annotate_operands(root, columns or {}, default_schema)
    for node in reversed(list(root.walk())):
        parent, key, index = node.parent, node.arg_key, node.index
        new = _rewrite(cast(exp.Expression, node))
        if new is node:
            continue
        if parent is None or key is None:
            root = new
        else:
            parent.set(key, new, index)
    return root.sql(dialect="duckdb")


def _rewrite(node: exp.Expression) -> exp.Expression:
    for kind, construct in _UNSUPPORTED.items():
        if type(node) is kind:
            return unsupported(construct)
    name = unchecked_function(node)
    if name is not None:
        return _error(
            f"the Spark function {name} has no DuckDB translation checked by dbt-ducklake: "
            "this view reads only through Spark"
        )
    rule = _RULES.get(type(node))
    return rule(node) if rule is not None else node


def _cast(node: exp.Expression) -> exp.Expression:
    """Spark's CAST fails on bad input (ANSI), so it stays CAST; TRY_CAST stays TRY_CAST.
    Spark truncates fractions cast to an integer where DuckDB rounds."""
    assert isinstance(node, exp.Cast)
    if isinstance(node, exp.TryCast) and node.args.get("safe"):
        return node
    to = node.args["to"]
    operand = node.this
    if to.this in _TEXT and not isinstance(operand, exp.Literal):
        return _as_text(operand, to)
    # Spark's CAST(x AS TIMESTAMP) and to_timestamp(x) (sqlglot: a plain Cast): a
    # TIMESTAMP with local time zone, numbers meaning seconds since the epoch
    spark_timestamp = (
        to.this == exp.DataType.Type.TIMESTAMPTZ
        if isinstance(node, exp.TryCast)
        else to.this == exp.DataType.Type.TIMESTAMP
    )
    if spark_timestamp and not (isinstance(operand, exp.Literal) and operand.is_string):
        return _as_timestamp(operand)
    if to.this in _INTEGRAL and not (isinstance(operand, exp.Literal) and operand.is_int):
        decimal = exp.DataType.build("DECIMAL(38, 9)")
        operand = exp.func("TRUNC", exp.Cast(this=operand, to=decimal))
    return exp.Cast(this=operand, to=to)


_TEXT = {exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR}

# CAST(x AS STRING) in DuckDB, chosen by x's type when DuckDB binds the view: a
# timestamp with time zone is written in UTC without DuckDB's "+00"; types whose text
# differs between the engines (Spark writes doubles outside [1e-3, 1e7) in exponent
# notation, structs and maps differently, binaries as bytes) fail instead
_AS_TEXT = """CASE
  WHEN typeof({x}) = 'TIMESTAMP WITH TIME ZONE'
    THEN CAST(timezone('UTC', CAST(CAST({x} AS VARCHAR) AS TIMESTAMPTZ)) AS VARCHAR)
  WHEN typeof({x}) IN ('DOUBLE', 'FLOAT')
    AND (abs(TRY_CAST(CAST({x} AS VARCHAR) AS DOUBLE)) >= 1e7
      OR (abs(TRY_CAST(CAST({x} AS VARCHAR) AS DOUBLE)) < 1e-3
        AND TRY_CAST(CAST({x} AS VARCHAR) AS DOUBLE) <> 0))
    THEN error('{double}')
  WHEN typeof({x}) LIKE 'STRUCT%' OR typeof({x}) LIKE 'MAP%' OR typeof({x}) = 'BLOB'
    THEN error('{nested}')
  ELSE CAST({x} AS VARCHAR) END"""
# its branches, taken alone where x's DuckDB type is evident
_UTC_TEXT = "CAST(timezone('UTC', CAST(CAST({x} AS VARCHAR) AS TIMESTAMPTZ)) AS VARCHAR)"
_DOUBLE_TEXT = """CASE
  WHEN abs(TRY_CAST(CAST({x} AS VARCHAR) AS DOUBLE)) >= 1e7
    OR (abs(TRY_CAST(CAST({x} AS VARCHAR) AS DOUBLE)) < 1e-3
      AND TRY_CAST(CAST({x} AS VARCHAR) AS DOUBLE) <> 0)
    THEN error('{double}')
  ELSE CAST({x} AS VARCHAR) END"""
_PLAIN_TEXT = "CAST({x} AS VARCHAR)"


_AS_TIMESTAMP = """CASE
  WHEN typeof({x}) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'FLOAT', 'DOUBLE')
    OR typeof({x}) LIKE 'DECIMAL%'
    THEN to_timestamp(CAST(CAST({x} AS VARCHAR) AS DOUBLE))
  ELSE CAST(CAST({x} AS VARCHAR) AS TIMESTAMPTZ) END"""


# the branches of `_AS_TIMESTAMP`, taken alone where x's DuckDB type is evident
_EPOCH_SECONDS = "to_timestamp(CAST(CAST({x} AS VARCHAR) AS DOUBLE))"
_TIMESTAMP_TEXT = "CAST(CAST({x} AS VARCHAR) AS TIMESTAMPTZ)"


def _as_timestamp(operand: exp.Expression) -> exp.Expression:
    kind = duckdb_kind(operand)
    template = (
        _AS_TIMESTAMP
        if kind is None
        else _EPOCH_SECONDS
        if kind in ("exact", "float")
        else _TIMESTAMP_TEXT
    )
    text = template.format(x=operand.sql(dialect="duckdb"))
    return mark(cast(exp.Expression, sqlglot.parse_one(text, read="duckdb")), "timestamptz")


def _as_text(operand: exp.Expression, to: exp.Expression) -> exp.Expression:
    x = operand.sql(dialect="duckdb")  # already rewritten: children come first
    double = "casting this double to STRING is Spark SQL without an equivalent in DuckDB"
    nested = (
        "casting a struct, map or binary to STRING is Spark SQL without an equivalent in DuckDB"
    )
    text = _text_template(duckdb_kind(operand)).format(x=x, double=double, nested=nested)
    return mark(cast(exp.Expression, sqlglot.parse_one(text, read="duckdb")), "text")


def _text_template(kind: str | None) -> str:
    """The branch of `_AS_TEXT` that x of this DuckDB kind takes; all of it if unknown."""
    if kind in ("exact", "text", "plain"):
        return _PLAIN_TEXT
    if kind == "timestamptz":
        return _UTC_TEXT
    if kind == "float":
        return _DOUBLE_TEXT
    return _AS_TEXT


def _division(node: exp.Expression) -> exp.Expression:
    """x / 0 and x % 0 fail in Spark (ANSI); DuckDB answers NULL or infinity. Spark
    divides DECIMALs exactly, DuckDB into a DOUBLE (see `_quotient`)."""
    divisor = node.args["expression"]
    if not (isinstance(divisor, exp.Literal) and not divisor.is_string and float(divisor.this)):
        kind = "REMAINDER_BY_ZERO" if isinstance(node, exp.Mod) else "DIVIDE_BY_ZERO"
        message = f"[{kind}] division by zero, as Spark (ANSI) reports it"
        # Spark checks the divisor only when the dividend is not NULL
        zero = exp.and_(
            exp.EQ(this=divisor.copy(), expression=exp.Literal.number(0)),
            exp.Not(this=exp.Is(this=node.this.copy(), expression=exp.Null())),
        )
        guarded = exp.Case(ifs=[exp.If(this=zero, true=_error(message))], default=divisor)
        node.set("expression", guarded)
    node.set("safe", None)
    if isinstance(node, exp.Div):
        return _quotient(node)
    left, right = node.meta.get(OPERANDS) or (None, None)
    if left and right and "decimal" not in (left.kind, right.kind):
        return node
    if left and right and "fractional" in (left.kind, right.kind):
        return node  # a DOUBLE in both engines
    if left is None or right is None:
        what = "the remainder (%)" if isinstance(node, exp.Mod) else "div"
        return _no_decimals(node, f"{what} of a DECIMAL whose Spark type is not known here")
    return _exact_integral(node, left, right)


def _exact_integral(node: exp.Expression, left: Number, right: Number) -> exp.Expression:
    """x % y and x div y of DECIMALs, exact as in Spark: both operands as integers at
    their common scale, truncating toward zero (the remainder takes the dividend's sign)."""
    scale = max(left.as_decimal()[1], right.as_decimal()[1])
    x, y = _unscaled(node.this, scale), _unscaled(node.args["expression"], scale)
    if isinstance(node, exp.IntDiv):
        text = f"CAST({x} // {y} AS BIGINT)"
    else:
        result = arithmetic(exp.Mod, left, right)
        text = (
            f"CAST({_scaled_down(f'({x} % {y})', scale)} AS DECIMAL({result.precision}, {scale}))"
        )
    return cast(exp.Expression, sqlglot.parse_one(text, read="duckdb"))


def _safe_division(node: exp.Expression) -> exp.Expression:
    """try_divide: NULL for a zero divisor in both engines; DECIMALs as `_quotient`."""
    divisor = node.args["expression"]
    division = exp.Div(this=exp.paren(node.this), expression=exp.paren(divisor.copy()))
    quotient = _quotient(division, node.meta)
    nonzero = exp.NEQ(this=divisor, expression=exp.Literal.number(0))
    return exp.Case(ifs=[exp.If(this=nonzero, true=quotient)], default=exp.Null())


def _quotient(node: exp.Expression, meta: dict[str, Any] | None = None) -> exp.Expression:
    """A DECIMAL divided by a DECIMAL or an integer is a DECIMAL in Spark, computed
    exactly and rounded half up to the scale of Spark's result type; DuckDB would return
    a DOUBLE. With both operand types known, DuckDB computes Spark's DECIMAL exactly;
    with either unknown, DuckDB refuses decimals rather than round differently."""
    left, right = (meta or node.meta).get(OPERANDS) or (None, None)
    # otherwise a DOUBLE in Spark, where DuckDB divides FLOATs into a FLOAT
    as_double = exp.Div(
        this=exp.Cast(this=node.this.copy(), to=exp.DataType.build("DOUBLE")),
        expression=node.args["expression"],
    )
    if left is None or right is None:
        construct = "dividing a DECIMAL whose Spark type is not known here"
        return _refuse_decimal([node.this, node.args["expression"]], as_double, construct)
    if "fractional" in (left.kind, right.kind) or left.kind == right.kind == "integral":
        return as_double
    result = arithmetic(exp.Div, left, right)
    (_, left_scale), (_, right_scale) = left.as_decimal(), right.as_decimal()
    return _exact_quotient(node.this, left_scale, node.expression, right_scale, result)


def _exact_quotient(
    dividend: exp.Expression,
    dividend_scale: int,
    divisor: exp.Expression,
    divisor_scale: int,
    result: Number,
) -> exp.Expression:
    """dividend / divisor as DECIMAL(p, s) = `result`, in DuckDB's 128-bit integers: both
    operands unscaled, the dividend shifted to the result's scale, the quotient rounded
    half up. An overflow fails in DuckDB (as a Spark overflow fails under ANSI)."""
    shift = result.scale + divisor_scale - dividend_scale
    numerator = _shifted(_unscaled(dividend, dividend_scale), max(shift, 0))
    denominator = _shifted(_unscaled(divisor, divisor_scale), max(-shift, 0))
    rounded = (
        f"((2 * abs({numerator}) + abs({denominator})) // (2 * abs({denominator}))"
        f" * sign({numerator}) * sign({denominator}))"
    )
    value = _scaled_down(rounded, result.scale)
    text = f"CAST({value} AS DECIMAL({result.precision}, {result.scale}))"
    return cast(exp.Expression, sqlglot.parse_one(text, read="duckdb"))


def _scaled_down(unscaled: str, scale: int) -> str:
    """The DECIMAL whose unscaled value is the integer `unscaled`, exactly."""
    if not scale:
        return unscaled
    return f"{unscaled} * CAST('{10**-scale:.{scale}f}' AS DECIMAL(38, {scale}))"


def _unscaled(value: exp.Expression, scale: int) -> str:
    """The 128-bit integer that is `value` times 10^scale (a DECIMAL's unscaled value)."""
    decimal = f"CAST({value.sql(dialect='duckdb')} AS DECIMAL(38, {scale}))"
    return f"CAST({_shifted(decimal, scale)} AS HUGEINT)"


def _shifted(value: str, exponent: int) -> str:
    """value * 10^exponent, exact (DuckDB fails on an overflow)."""
    return f"({value} * CAST('{10**exponent}' AS HUGEINT))" if exponent else value


def _average(node: exp.Expression) -> exp.Expression:
    """avg of a DECIMAL(p, s) is a DECIMAL(p + 4, s + 4) in Spark, a DOUBLE in DuckDB."""
    (argument,) = node.meta.get(OPERANDS) or (None,)
    if argument is not None and argument.kind != "decimal":
        return node
    if isinstance(node.parent, exp.Window):
        node.meta[_WINDOWED_AVERAGE] = argument is not None
        return node  # the window decides (`_window`)
    if argument is None:
        total = exp.Sum(this=node.this.copy())
        return _refuse_decimal([total], node, "avg of a DECIMAL whose Spark type is not known here")
    total, count = exp.Sum(this=node.this.copy()), exp.Count(this=node.this.copy())
    result = aggregate(exp.Avg, argument)
    return _exact_quotient(total, argument.scale, count, 0, result)


_WINDOWED_AVERAGE = "ducklake_windowed_average"  # meta: whether the argument is a DECIMAL


def _window(node: exp.Expression) -> exp.Expression:
    """A windowed avg of a DECIMAL has no DuckDB form here: DuckDB refuses the view."""
    known_decimal = node.this.meta.get(_WINDOWED_AVERAGE)
    if known_decimal is None:
        return node
    if known_decimal:
        return unsupported("a windowed avg of a DECIMAL")
    total = node.copy()
    total.set("this", exp.Sum(this=node.this.this.copy()))
    return _refuse_decimal([total], node, "a windowed avg of a DECIMAL")


def _no_decimals(node: exp.Expression, construct: str) -> exp.Expression:
    """`node` unless an operand is a DECIMAL in DuckDB, which then refuses it."""
    return _refuse_decimal([node.this, node.args["expression"]], node, construct)


def _refuse_decimal(
    probes: list[exp.Expression], node: exp.Expression, construct: str
) -> exp.Expression:
    """`node`, unless a probe is a DECIMAL in DuckDB (its type is known when DuckDB binds
    the view): then DuckDB refuses the view, naming the construct."""
    typed = [exp.Anonymous(this="typeof", expressions=[p.copy()]) for p in probes]
    pattern = exp.Literal.string("DECIMAL%")
    decimal = exp.or_(*(exp.Like(this=t, expression=pattern) for t in typed))
    return exp.Case(ifs=[exp.If(this=decimal, true=unsupported(construct))], default=node)


def _as_date(node: exp.Expression) -> exp.Expression:
    """date_add, date_sub and add_months return DATE in Spark, TIMESTAMP in DuckDB."""
    return exp.Cast(this=node, to=exp.DataType.build("DATE"))


def _months_between(node: exp.Expression) -> exp.Expression:
    """Spark rounds months_between to 8 digits unless told not to; the fraction of a
    month counts the time of day of timestamps, which DuckDB's form (sqlglot's) drops:
    DuckDB refuses anything but two DATEs."""
    roundoff = node.args.get("roundoff")
    value = node
    if not (isinstance(roundoff, exp.Boolean) and not roundoff.this):
        value = exp.Anonymous(this="ROUND", expressions=[node, exp.Literal.number(8)])
    probes = [
        exp.Anonymous(this="typeof", expressions=[o.copy()]) for o in (node.this, node.expression)
    ]
    not_dates = exp.or_(*(exp.NEQ(this=p, expression=exp.Literal.string("DATE")) for p in probes))
    refusal = unsupported("months_between of anything but two DATEs")
    return exp.Case(ifs=[exp.If(this=not_dates, true=refusal)], default=value)


def _unit(node: exp.Expression) -> exp.Expression:
    unit = node.args.get("unit")
    name = unit.name.upper() if unit is not None else ""
    if name not in _UNITS:
        return unsupported(f"truncating to {name or 'this unit'}")
    node.set("unit", exp.Literal.string(_UNITS[name]))
    return node


def _date_trunc(node: exp.Expression) -> exp.Expression:
    """trunc(date, 'MM') returns a DATE."""
    truncated = _unit(node)
    if not isinstance(truncated, exp.DateTrunc):
        return truncated
    return exp.Cast(this=truncated, to=exp.DataType.build("DATE"))


def _day_of_week(node: exp.Expression) -> exp.Expression:
    return exp.Add(this=node, expression=exp.Literal.number(1))  # Spark: Sunday = 1


def _unix_time(node: exp.Expression) -> exp.Expression:
    fmt = node.args.get("format")  # sqlglot's form of Spark's default format
    if fmt is not None and fmt.name.replace("strict", "") != "%Y-%m-%d %H:%M:%S":
        return node  # an explicit format: sqlglot's strptime translation
    moment = exp.Cast(this=node.this, to=exp.DataType.build("TIMESTAMPTZ"))
    seconds = exp.Anonymous(this="EPOCH", expressions=[moment])
    return exp.Cast(this=seconds, to=exp.DataType.build("BIGINT"))


def _bracket(node: exp.Expression) -> exp.Expression:
    """An array index past the end fails in Spark (ANSI) and is NULL in DuckDB;
    try_element_at is NULL in both."""
    index = node.expressions[0] if len(node.expressions) == 1 else None
    while isinstance(index, exp.Paren):  # split(…)[(1)], as dbt macros write it
        index = index.this
    literal = isinstance(index, exp.Literal) and index.is_int
    negative = isinstance(index, exp.Neg) and isinstance(index.this, exp.Literal)
    if node.args.get("safe") or not (literal or negative):
        return node  # try_element_at, a map key or a computed index
    assert index is not None
    offset = int(node.args.get("offset") or 0)
    position = -int(index.this.this) if negative else int(index.this) + 1 - offset
    if position == 0:
        return unsupported("element_at(array, 0)")
    array = node.this
    length = exp.func("LEN", array.copy())
    message = "[INVALID_ARRAY_INDEX] the array index is out of bounds, as Spark reports it"
    error = _error(message)
    in_range = exp.GTE(this=length, expression=exp.Literal.number(abs(position)))
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=array.copy(), expression=exp.Null()), true=exp.Null()),
            exp.If(this=in_range, true=node),
        ],
        default=error,
    )


def _sequence(node: exp.Expression) -> exp.Expression:
    """sequence(5, 1) counts down in Spark; generate_series needs the step."""
    if node.args.get("step") is None:
        start, end = node.args["start"], node.args["end"]
        ascending = exp.LTE(this=start.copy(), expression=end.copy())
        step = exp.Case(
            ifs=[exp.If(this=ascending, true=exp.Literal.number(1))],
            default=exp.Literal.number(-1),
        )
        node.set("step", step)
    return node


def _exists(node: exp.Expression) -> exp.Expression:
    """exists(array, x -> p): three-valued, as in Spark (NULL when no element is true and
    some predicate is NULL)."""
    lam = node.args.get("expression")
    if not isinstance(lam, exp.Lambda):
        return node  # EXISTS (subquery)
    array = node.this

    def any_element(body: exp.Expression) -> exp.Expression:
        mapped = exp.Lambda(this=body, expressions=[v.copy() for v in lam.expressions])
        listed = exp.Anonymous(this="LIST_TRANSFORM", expressions=[array.copy(), mapped])
        return exp.Anonymous(this="LIST_CONTAINS", expressions=[listed, exp.true()])

    unknown = exp.Is(this=exp.Paren(this=lam.this.copy()), expression=exp.Null())
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=array.copy(), expression=exp.Null()), true=exp.Null()),
            exp.If(this=any_element(lam.this.copy()), true=exp.true()),
            exp.If(this=any_element(unknown), true=exp.Null()),
        ],
        default=exp.false(),
    )


def _position(node: exp.Expression) -> exp.Expression:
    """array_position is 0 when absent in Spark, NULL in DuckDB."""
    found = exp.Coalesce(this=node.copy(), expressions=[exp.Literal.number(0)])
    missing = exp.Is(this=node.this.copy(), expression=exp.Null())
    return exp.If(this=missing, true=exp.Null(), false=found)


def _collect(node: exp.Expression) -> exp.Expression:
    """collect_list / collect_set of no rows is [] in Spark, NULL in DuckDB."""
    return exp.Coalesce(this=node, expressions=[exp.Array(expressions=[])])


def _anonymous(node: exp.Expression) -> exp.Expression:
    name = str(node.this).upper()
    args = node.expressions
    if name == "ASSERT_TRUE" and len(args) in (1, 2):
        # NULL when the condition holds, an error otherwise (a NULL condition included)
        text = f"'{args[0].sql(dialect='spark')}' is not true!"
        message = args[1] if len(args) == 2 else exp.Literal.string(text)
        fail = _error(message)
        return exp.Case(ifs=[exp.If(this=args[0], true=exp.Null())], default=fail)
    if name == "RAISE_ERROR" and len(args) == 1:
        return _error(args[0])
    if name in ("ISNULL", "ISNOTNULL") and len(args) == 1:
        test = exp.Is(this=args[0], expression=exp.Null())
        return test if name == "ISNULL" else exp.Not(this=test)
    if name == "CARDINALITY" and len(args) == 1:
        return exp.ArraySize(this=args[0])
    if name == "OCTET_LENGTH" and len(args) == 1:
        return exp.Anonymous(this="STRLEN", expressions=args)  # UTF-8 bytes
    rule = ANONYMOUS_RULES.get(name)
    new = rule(args) if rule is not None else None
    return node if new is None else new


def _rounded(node: exp.Expression) -> exp.Expression:
    """ceil / floor of a DOUBLE is a BIGINT in Spark, a DOUBLE in DuckDB."""
    (operand,) = node.meta.get(OPERANDS) or (None,)
    if operand is None or operand.kind != "fractional" or node.args.get("decimals"):
        return node
    return exp.Cast(this=node, to=exp.DataType.build("BIGINT"))


def _nanvl(node: exp.Expression) -> exp.Expression:
    """nanvl(a, b): b where a is NaN; DuckDB has no nanvl."""
    nan = exp.Anonymous(this="ISNAN", expressions=[node.this.copy()])
    return exp.Case(ifs=[exp.If(this=nan, true=node.expression)], default=node.this)


def _time_travel(node: exp.Expression) -> exp.Expression:
    """Spark's `t VERSION AS OF n` / `TIMESTAMP AS OF '…'` is DuckDB's `t AT (VERSION => n)`
    / `AT (TIMESTAMP => …)`; a timestamp without a zone means UTC, as the engine reads it."""
    value = node.expression
    if not isinstance(value, exp.Literal):
        return node  # the engine refuses it before the view is stored
    if node.name.upper() == "VERSION":
        return exp.Var(this=f"AT (VERSION => {int(value.name)})")
    stamp = iso_datetime(value.name)
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)
    return exp.Var(this=f"AT (TIMESTAMP => TIMESTAMPTZ '{stamp.isoformat(sep=' ')}')")


_RULES: dict[type[exp.Expression], Callable[[exp.Expression], exp.Expression]] = {
    exp.Version: _time_travel,
    exp.Cast: _cast,
    exp.TryCast: _cast,
    exp.TsOrDsAdd: _as_date,
    exp.AddMonths: _as_date,
    exp.MonthsBetween: _months_between,
    exp.DateTrunc: _date_trunc,
    exp.TimestampTrunc: _unit,
    exp.DayOfWeek: _day_of_week,
    exp.StrToUnix: _unix_time,
    exp.Bracket: _bracket,
    exp.GenerateSeries: _sequence,
    exp.Exists: _exists,
    exp.ArrayPosition: _position,
    exp.ArrayAgg: _collect,
    exp.ArrayUniqueAgg: _collect,
    exp.Anonymous: _anonymous,
    exp.Div: _division,
    exp.Mod: _division,
    exp.IntDiv: _division,
    exp.SafeDivide: _safe_division,
    exp.Avg: _average,
    exp.Window: _window,
    exp.Nanvl: _nanvl,
    exp.Ceil: _rounded,
    exp.Floor: _rounded,
    **FUNCTION_RULES,
    **EDGE_RULES,
}

"""DuckDB forms of Spark built-in functions, with Spark's meaning (see `duckdb_views`).

Each rule receives a node whose operands are already DuckDB's and returns its DuckDB
form: Spark's value, NULL behaviour and errors, or a DuckDB `error()` naming the
construct where no faithful form exists (for an argument, or for a row). DuckDB text is
built from templates whose `{x}` operands are inserted parenthesized; lambda variables
are named `__dl_*`, which no view column is expected to be called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import sqlglot
from sqlglot import exp

Rule = Callable[[exp.Expression], exp.Expression]


def error_call(message: str | exp.Expression) -> exp.Expression:
    """DuckDB's error(): fails the query, with `message`, where it is evaluated."""
    text = exp.Literal.string(message) if isinstance(message, str) else message
    return exp.Anonymous(this="error", expressions=[text])


def unsupported(construct: str) -> exp.Expression:
    message = (
        f"{construct} is Spark SQL without an equivalent in DuckDB: this view was written "
        "by dbt-ducklake and reads only through Spark"
    )
    return error_call(message)


def duck(template: str, **parts: exp.Expression | str) -> exp.Expression:
    """The DuckDB expression `template` with each `{name}` replaced by the DuckDB text of
    `parts[name]`: an expression parenthesized, a string as it is."""
    rendered = {
        name: f"({part.sql(dialect='duckdb')})" if isinstance(part, exp.Expression) else part
        for name, part in parts.items()
    }
    return cast(exp.Expression, sqlglot.parse_one(template.format(**rendered), read="duckdb"))


def _refusal(construct: str) -> str:
    """The DuckDB text of `unsupported(construct)`, for templates."""
    return unsupported(construct).sql(dialect="duckdb")


# --- Spark forms: rewritten in Spark terms before the view's types are derived ----------


def spark_forms(root: exp.Expression) -> exp.Expression:
    """`root` with Spark functions that are other Spark constructs written as those, so
    the translation of the constructs (with their Spark types) applies: pmod(a, n) is
    `a % n`, plus n when that is negative (Spark's definition)."""
    for node in reversed(list(root.find_all(exp.Anonymous))):  # inner calls first
        if node.name.upper() == "PMOD" and len(node.expressions) == 2:
            a, n = node.expressions
            remainder = exp.Mod(this=exp.paren(a.copy()), expression=exp.paren(n.copy()))
            negative = exp.LT(this=remainder.copy(), expression=exp.Literal.number(0))
            shifted = exp.Mod(
                this=exp.paren(exp.Add(this=remainder.copy(), expression=exp.paren(n.copy()))),
                expression=exp.paren(n.copy()),
            )
            case = exp.Case(ifs=[exp.If(this=negative, true=shifted)], default=remainder)
            replacement = exp.paren(case)
            if node is root:
                return replacement
            node.replace(replacement)
    return root


# --- strings -----------------------------------------------------------------------


def _chr(node: exp.Expression) -> exp.Expression:
    """chr(n): '' for a negative n, else the character n % 256 (DuckDB: any code point)."""
    if len(node.expressions) != 1 or node.args.get("charset"):
        return unsupported("chr with a character set")
    return duck(
        "CASE WHEN {n} < 0 THEN '' ELSE chr(CAST({n} % 256 AS INTEGER)) END",
        n=node.expressions[0],
    )


def _borderless(delimiter: str) -> bool:
    """Whether no proper prefix of `delimiter` is also its suffix: then its occurrences in
    a string never overlap, and splitting at them finds what Spark's scan finds."""
    return all(delimiter[:k] != delimiter[-k:] for k in range(1, len(delimiter)))


def _substring_index(node: exp.Expression) -> exp.Expression:
    """substring_index(s, delim, n): before the n-th delimiter (after the n-th from the
    end when n < 0); '' for n = 0 or an empty delimiter. Spark scans for occurrences that
    may overlap; with a literal delimiter that cannot overlap itself, splitting agrees."""
    delimiter, count = node.args["delimiter"], node.args["count"]
    if not (isinstance(delimiter, exp.Literal) and delimiter.is_string):
        return unsupported("substring_index with a delimiter that is not a literal")
    if not delimiter.name:
        return duck(
            "CASE WHEN {s} IS NULL OR {n} IS NULL THEN NULL ELSE '' END", s=node.this, n=count
        )
    if not _borderless(delimiter.name):
        return unsupported("substring_index with a delimiter that can overlap itself")
    return duck(
        "CASE WHEN {n} > 0 THEN array_to_string(string_split({s}, {d})[1:{n}], {d}) "
        "WHEN {n} < 0 THEN array_to_string(string_split({s}, {d})[{n}:], {d}) "
        "WHEN {s} IS NOT NULL THEN '' END",
        s=node.this,
        d=delimiter,
        n=count,
    )


def _levenshtein(node: exp.Expression) -> exp.Expression:
    """levenshtein(a, b) counts characters in Spark, bytes in DuckDB: DuckDB refuses a
    row with a non-ASCII string. Spark's third argument (a threshold) has no form here."""
    if any(node.args.get(k) for k in ("ins_cost", "del_cost", "sub_cost", "max_dist")):
        return unsupported("levenshtein with a threshold")
    refusal = _refusal("levenshtein of a non-ASCII string")
    return duck(
        "CASE WHEN strlen({a}) <> length({a}) OR strlen({b}) <> length({b}) "
        f"THEN {refusal} ELSE levenshtein({{a}}, {{b}}) END",
        a=node.this,
        b=node.expression,
    )


def _unhex(node: exp.Expression) -> exp.Expression:
    """unhex: NULL for a non-hex digit, a leading 0 for an odd length (DuckDB fails on
    the first and differs on the second)."""
    return duck(
        "CASE WHEN regexp_full_match({s}, '[0-9a-fA-F]*') THEN unhex("
        "CASE WHEN length({s}) % 2 = 1 THEN '0' || {s} ELSE {s} END) END",
        s=node.this,
    )


def _base64(node: exp.Expression) -> exp.Expression:
    """base64 of a string encodes its UTF-8 bytes (DuckDB's implicit cast to BLOB would
    read backslash escapes)."""
    return duck("to_base64(encode({s}))", s=node.this)


def _sha2(node: exp.Expression) -> exp.Expression:
    """sha2(s, 256) (or 0) is DuckDB's sha256; DuckDB has no SHA-224/384/512."""
    bits = node.args.get("length")
    if bits is None or (isinstance(bits, exp.Literal) and bits.name in ("256", "0")):
        return duck("sha256({s})", s=node.this)
    return unsupported(f"sha2 with {bits.sql(dialect='spark')} bits")


def _btrim(args: list[exp.Expression]) -> exp.Expression | None:
    if len(args) == 1:
        return duck("trim({s})", s=args[0])
    return duck("trim({s}, {chars})", s=args[0], chars=args[1]) if len(args) == 2 else None


# --- numbers -----------------------------------------------------------------------


def _is_nan(node: exp.Expression) -> exp.Expression:
    return duck("coalesce(isnan({x}), false)", x=node.this)  # isnan(NULL) is false


def _factorial(node: exp.Expression) -> exp.Expression:
    """factorial(n): NULL outside [0, 20] (a BIGINT in Spark)."""
    return duck(
        "CASE WHEN {n} BETWEEN 0 AND 20 THEN CAST(factorial({n}) AS BIGINT) END", n=node.this
    )


def _bit_count(node: exp.Expression) -> exp.Expression:
    """bit_count counts the bits of the value as a BIGINT (a boolean as 0 or 1)."""
    return duck("bit_count(CAST({x} AS BIGINT))", x=node.this)


def _cot(node: exp.Expression) -> exp.Expression:
    return duck("CAST(1 AS DOUBLE) / tan({x})", x=node.this)  # cot(0) is infinite


def _ln(node: exp.Expression) -> exp.Expression:
    """ln of a non-positive number is NULL in Spark, an error in DuckDB."""
    return duck("CASE WHEN {x} <= 0 THEN NULL ELSE ln({x}) END", x=node.this)


def _log(node: exp.Expression) -> exp.Expression:
    """log(b, x), log10, log2: NULL for a non-positive b or x; log base 1 is infinite."""
    if node.expression is None:
        return _ln(node)
    return duck(
        "CASE WHEN {x} <= 0 OR {b} <= 0 THEN NULL "
        "WHEN {b} = 1 THEN ln({x}) / CAST(0 AS DOUBLE) ELSE log({b}, {x}) END",
        b=node.this,
        x=node.expression,
    )


def _sqrt(node: exp.Expression) -> exp.Expression:
    return duck("CASE WHEN {x} < 0 THEN CAST('NaN' AS DOUBLE) ELSE sqrt({x}) END", x=node.this)


def _negative(node: exp.Expression) -> exp.Expression:
    return exp.Neg(this=exp.paren(node.this))


# --- dates and times -----------------------------------------------------------------

_DAYS = {"MO": 1, "TU": 2, "WE": 3, "TH": 4, "FR": 5, "SA": 6, "SU": 7}  # ISO numbers
_DAY_NAMES = {
    name: number
    for prefix, number in _DAYS.items()
    for full in ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")
    if full.startswith(prefix)
    for name in (prefix, full[:3], full)
}


def _as_date(value: exp.Expression) -> exp.Expression:
    """Spark's implicit cast to DATE of a date, timestamp or string argument."""
    return exp.TsOrDsToDate(this=value)


def _next_day(node: exp.Expression) -> exp.Expression:
    """next_day(d, 'MO'): the first such day after d; the day is a literal here."""
    day = node.expression
    if not (isinstance(day, exp.Literal) and day.is_string):
        return unsupported("next_day with a day of week that is not a literal")
    number = _DAY_NAMES.get(day.name.strip().upper())
    if number is None:
        message = f"[ILLEGAL_DAY_OF_WEEK] Illegal input for day of week: {day.name}"
        return duck(
            "CASE WHEN {d} IS NOT NULL THEN error({m}) END",
            d=node.this,
            m=exp.Literal.string(message),
        )
    return duck(
        f"CAST({{d}} + INTERVAL (({number} - isodow({{d}}) + 6) % 7 + 1) DAY AS DATE)",
        d=_as_date(node.this),
    )


# extract / date_part fields, Spark's names for them, as DuckDB computes them on a date
# or timestamp ({x})
_FIELDS = {
    ("YEAR", "Y", "YEARS", "YR", "YRS"): "year({x})",
    ("YEAROFWEEK",): "isoyear({x})",
    ("QUARTER", "QTR"): "quarter({x})",
    ("MONTH", "MON", "MONS", "MONTHS"): "month({x})",
    ("WEEK", "W", "WEEKS"): "week({x})",
    ("DAY", "D", "DAYS"): "day({x})",
    ("DAYOFWEEK", "DOW"): "dayofweek({x}) + 1",
    ("DAYOFWEEK_ISO", "DOW_ISO"): "isodow({x})",
    ("DOY",): "dayofyear({x})",
    ("HOUR", "H", "HOURS", "HR", "HRS"): "hour({x})",
    ("MINUTE", "M", "MIN", "MINS", "MINUTES"): "minute({x})",
    # seconds with their fraction, a DECIMAL(8, 6) in Spark
    ("SECOND", "S", "SEC", "SECONDS", "SECS"): (
        "CAST(CAST(microsecond({x}) AS DECIMAL(8, 0)) * CAST('0.000001' AS DECIMAL(7, 6))"
        " AS DECIMAL(8, 6))"
    ),
}
_FIELD = {name: form for names, form in _FIELDS.items() for name in names}


def _field(name: str, source: exp.Expression) -> exp.Expression:
    """extract(name FROM source) of a date or a timestamp (an interval is refused: DuckDB
    keeps its parts unnormalized)."""
    form = _FIELD.get(name.upper())
    if form is None:
        return unsupported(f"extracting {name}")
    refusal = _refusal("extracting a field of an interval")
    return duck(f"CASE WHEN typeof({{x}}) = 'INTERVAL' THEN {refusal} ELSE {form} END", x=source)


def _extract(node: exp.Expression) -> exp.Expression:
    return _field(node.this.name, node.expression)


def _date_part(args: list[exp.Expression]) -> exp.Expression | None:
    if len(args) != 2:
        return None
    field, source = args
    if not (isinstance(field, exp.Literal) and field.is_string):
        return unsupported("date_part with a field that is not a literal")
    return _field(field.name, source)


def _make_timestamp(node: exp.Expression) -> exp.Expression:
    """make_timestamp(y, mo, d, h, mi, s) in the session time zone: Spark fails on an hour
    past 23 or seconds past 60 where DuckDB carries them over; 60 seconds (exactly) are
    the next minute in both (DuckDB's make_timestamptz would also carry over days). A
    time zone argument has no form here."""
    if any(node.args.get(k) is not None for k in ("nano", "zone", "milli", "this")):
        return unsupported("make_timestamp with a time zone")
    parts = {k: node.args[k] for k in ("year", "month", "day", "hour", "min", "sec")}
    message = "[DATETIME_FIELD_OUT_OF_BOUNDS] an hour, minute or second out of range"
    return duck(
        "CASE WHEN NOT ({hour} BETWEEN 0 AND 23 AND {min} BETWEEN 0 AND 59 "
        "AND {sec} BETWEEN 0 AND 60) "
        f"THEN error('{message}') "
        "ELSE CAST(make_timestamp({year}, {month}, {day}, {hour}, {min}, CAST({sec} AS DOUBLE))"
        " AS TIMESTAMPTZ) END",
        **parts,
    )


def _date_from_unix_date(node: exp.Expression) -> exp.Expression:
    return duck("CAST(DATE '1970-01-01' + INTERVAL ({n}) DAY AS DATE)", n=node.this)


def _floor_div(value: str, divisor: int) -> str:
    """value // divisor rounded down (DuckDB's // truncates toward zero)."""
    return f"(({value}) - ((({value}) % {divisor}) + {divisor}) % {divisor}) // {divisor}"


def _unix_seconds(node: exp.Expression) -> exp.Expression:
    micros = "epoch_us(CAST({t} AS TIMESTAMPTZ))"
    return duck(_floor_div(micros, 1_000_000), t=node.this)


def _unix_millis(node: exp.Expression) -> exp.Expression:
    micros = "epoch_us(CAST({t} AS TIMESTAMPTZ))"
    return duck(_floor_div(micros, 1_000), t=node.this)


_INTEGERS = "('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT')"


def _from_epoch(scale: int, name: str) -> Callable[[list[exp.Expression]], exp.Expression | None]:
    """timestamp_seconds / _millis / _micros of an integer (Spark's seconds may also be
    fractional, which DuckDB refuses rather than round differently)."""

    def rule(args: list[exp.Expression]) -> exp.Expression | None:
        if len(args) != 1:
            return None
        refusal = _refusal(f"{name} of a number that is not an integer")
        return duck(
            f"CASE WHEN typeof({{x}}) NOT IN {_INTEGERS} THEN {refusal} "
            f"ELSE timezone('UTC', make_timestamp(TRY_CAST({{x}} AS BIGINT) * {scale})) END",
            x=args[0],
        )

    return rule


# --- arrays ------------------------------------------------------------------------

# the distinct elements of a list in their first order, NULL kept once (list_position
# finds NULL elements)
_DISTINCT = "list_filter({l}, lambda __dl_v, __dl_k: list_position({l}, __dl_v) = __dl_k)"


def _distinct_of(listed: str) -> str:
    return _DISTINCT.format(l=f"({listed})")


def _array_distinct(node: exp.Expression) -> exp.Expression:
    """array_distinct keeps the first occurrences in order (DuckDB's list_distinct does
    not keep the order, nor a NULL)."""
    return duck(_distinct_of("{a}"), a=node.this)


def _array_union(args: list[exp.Expression]) -> exp.Expression | None:
    if len(args) != 2:
        return None
    distinct = _distinct_of("list_concat({a}, {b})")
    return duck(
        f"CASE WHEN {{a}} IS NULL OR {{b}} IS NULL THEN NULL ELSE {distinct} END",
        a=args[0],
        b=args[1],
    )


def _array_intersect(node: exp.Expression) -> exp.Expression:
    if len(node.expressions) != 2:
        return unsupported("array_intersect of more than two arrays")
    inside = "list_filter({a}, lambda __dl_e: list_position({b}, __dl_e) IS NOT NULL)"
    distinct = _distinct_of(inside)
    a, b = node.expressions
    return duck(f"CASE WHEN {{a}} IS NULL OR {{b}} IS NULL THEN NULL ELSE {distinct} END", a=a, b=b)


def _array_except(node: exp.Expression) -> exp.Expression:
    inside = "list_filter({a}, lambda __dl_e: list_position({b}, __dl_e) IS NULL)"
    distinct = _distinct_of(inside)
    return duck(
        f"CASE WHEN {{a}} IS NULL OR {{b}} IS NULL THEN NULL ELSE {distinct} END",
        a=node.this,
        b=node.expression,
    )


def _array_remove(node: exp.Expression) -> exp.Expression:
    """array_remove keeps NULL elements; removing NULL is NULL."""
    return duck(
        "CASE WHEN {e} IS NULL THEN NULL "
        "ELSE list_filter({a}, lambda __dl_e: __dl_e IS DISTINCT FROM {e}) END",
        a=node.this,
        e=node.expression,
    )


def _arrays_overlap(args: list[exp.Expression]) -> exp.Expression | None:
    """arrays_overlap is three-valued: NULL when no non-NULL element is common, both
    arrays are non-empty and either holds a NULL."""
    if len(args) != 2:
        return None
    has_null = "len(list_filter({x}, lambda __dl_e: __dl_e IS NULL)) > 0"
    return duck(
        "CASE WHEN {a} IS NULL OR {b} IS NULL THEN NULL "
        "WHEN len(list_filter({a}, lambda __dl_e: __dl_e IS NOT NULL "
        "AND list_position({b}, __dl_e) IS NOT NULL)) > 0 THEN true "
        "WHEN len({a}) > 0 AND len({b}) > 0 "
        f"AND ({has_null.format(x='{a}')} OR {has_null.format(x='{b}')}) THEN NULL "
        "ELSE false END",
        a=args[0],
        b=args[1],
    )


def _array_repeat(args: list[exp.Expression]) -> exp.Expression | None:
    """array_repeat(e, n): n copies of e, none for n < 0."""
    if len(args) != 2:
        return None
    return duck(
        "CASE WHEN {n} IS NULL THEN NULL ELSE list_resize([{e}], greatest({n}, 0), {e}) END",
        e=args[0],
        n=args[1],
    )


FUNCTION_RULES: dict[type[exp.Expression], Rule] = {
    exp.Chr: _chr,
    exp.SubstringIndex: _substring_index,
    exp.Levenshtein: _levenshtein,
    exp.Unhex: _unhex,
    exp.ToBase64: _base64,
    exp.SHA2: _sha2,
    exp.IsNan: _is_nan,
    exp.Factorial: _factorial,
    exp.BitwiseCount: _bit_count,
    exp.Cot: _cot,
    exp.Ln: _ln,
    exp.Log: _log,
    exp.Sqrt: _sqrt,
    exp.Negative: _negative,
    exp.ArrayDistinct: _array_distinct,
    exp.ArrayIntersect: _array_intersect,
    exp.ArrayExcept: _array_except,
    exp.ArrayRemove: _array_remove,
    exp.NextDay: _next_day,
    exp.Extract: _extract,
    exp.TimestampFromParts: _make_timestamp,
    exp.DateFromUnixDate: _date_from_unix_date,
    exp.UnixSeconds: _unix_seconds,
    exp.UnixMillis: _unix_millis,
}

# Spark functions sqlglot does not know (exp.Anonymous), by upper-case name: the DuckDB
# form of the arguments, or None for an arity Spark does not have (left as it is)
ANONYMOUS_RULES: dict[str, Callable[[list[exp.Expression]], exp.Expression | None]] = {
    "BTRIM": _btrim,
    "ARRAY_UNION": _array_union,
    "ARRAYS_OVERLAP": _arrays_overlap,
    "ARRAY_REPEAT": _array_repeat,
    "WEEKDAY": lambda args: (
        duck("isodow({d}) - 1", d=_as_date(args[0])) if len(args) == 1 else None
    ),
    "DATE_PART": _date_part,
    "DATEPART": _date_part,
    "TIMESTAMP_SECONDS": _from_epoch(1_000_000, "timestamp_seconds"),
    "TIMESTAMP_MILLIS": _from_epoch(1_000, "timestamp_millis"),
    "TIMESTAMP_MICROS": _from_epoch(1, "timestamp_micros"),
    "E": lambda args: None if args else duck("CAST('2.718281828459045' AS DOUBLE)"),
    "POSITIVE": lambda args: exp.paren(args[0]) if len(args) == 1 else None,
    "ZEROIFNULL": lambda args: duck("coalesce({x}, 0)", x=args[0]) if len(args) == 1 else None,
    "NULLIFZERO": lambda args: duck("nullif({x}, 0)", x=args[0]) if len(args) == 1 else None,
    "EVERY": lambda args: duck("bool_and({x})", x=args[0]) if len(args) == 1 else None,
    "SOME": lambda args: duck("bool_or({x})", x=args[0]) if len(args) == 1 else None,
}

"""The Spark functions whose DuckDB translation is checked.

A view's DuckDB text may call only these (as sqlglot parses them), each of which
`tests/spark/test_view_meaning.py` reads in both engines; any other function becomes a
DuckDB error naming it, so "never a silently different meaning" holds by construction.
The same test fails if this list names a function its corpus does not use. To add a
function: add a view body using it to the corpus, make both engines agree (a rule in
`duckdb_views.py`, `duckdb_functions.py` or `duckdb_edges.py` where they do not), then
name it here.
"""

from __future__ import annotations

from sqlglot import exp

_CHECKED_NAMES = """
Abs Acos AddMonths AnyValue ApproxDistinct ArgMax ArgMin Array ArrayAgg ArrayAppend
ArrayCompact ArrayContains ArrayDistinct ArrayExcept ArrayFilter ArrayIntersect ArrayMax
ArrayMin ArrayPosition ArrayPrepend ArrayRemove ArraySize ArraySlice ArraySort
ArrayToString ArrayUniqueAgg Ascii Asin Atan Atan2 Avg BitLength BitwiseCount Case Cast
Cbrt Ceil Chr Coalesce Concat ConcatWs Contains Cos Cosh Cot Count CountIf CovarPop
CovarSamp CumeDist CurrentDate CurrentTimestamp DateDiff DateFromUnixDate DateTrunc Day
DayOfMonth DayOfWeek DayOfYear Degrees DenseRank EndsWith EqualNull Exists Exp Explode
Extract Factorial First FirstValue Floor GenerateSeries Greatest Hex Hour If Initcap
IsNan JSONExtractScalar JSONFormat Lag LastDay LastValue Lead Least Left Length
Levenshtein Ln Log LogicalAnd LogicalOr Lower LowerHex MapKeys Max MD5 Median Min Minute
Month MonthsBetween Nanvl Negative NextDay NthValue Ntile Nullif Nvl2 Pad PercentRank Pi
Pow Quarter Radians Rank Reduce RegexpExtract RegexpLike RegexpReplace RegexpSplit
Repeat Replace Reverse Right Round RowNumber SafeDivide Second SHA SHA2 Sign Sin Sinh
SplitPart Sqrt StartsWith Stddev StddevPop StddevSamp StrPosition StrToTime StrToUnix
Struct Substring SubstringIndex Sum Tan Tanh TimestampAdd TimestampFromParts
TimestampTrunc TimeStrToTime TimeToStr ToBase64 Transform Translate Trim TryCast
TsOrDsAdd TsOrDsToDate Unhex UnixDate UnixMicros UnixMillis UnixSeconds UnixToStr Upper
Variance VariancePop VarMap WeekOfYear Year
"""

CHECKED_FUNCTIONS: frozenset[type[exp.Expression]] = frozenset(
    getattr(exp, name) for name in _CHECKED_NAMES.split()
)

# functions sqlglot does not know (exp.Anonymous), by upper-case name
CHECKED_ANONYMOUS = frozenset(
    {
        "ARRAYS_OVERLAP",
        "ARRAY_REPEAT",
        "ARRAY_UNION",
        "ASSERT_TRUE",
        "BTRIM",
        "CARDINALITY",
        "DATEPART",
        "DATE_PART",
        "E",
        "EVERY",
        "ISNOTNULL",
        "ISNULL",
        "MAKE_DATE",
        "MAP_VALUES",
        "NULLIFZERO",
        "OCTET_LENGTH",
        "PMOD",
        "POSITIVE",
        "RAISE_ERROR",
        "SOME",
        "TIMESTAMP_MICROS",
        "TIMESTAMP_MILLIS",
        "TIMESTAMP_SECONDS",
        "WEEKDAY",
        "ZEROIFNULL",
    }
)


def unchecked_function(node: exp.Expression) -> str | None:
    """The Spark name of `node` if it calls a function outside the checked list."""
    if not isinstance(node, exp.Func) or isinstance(node, exp.Connector):
        return None  # an operator, a column, a literal, …
    if isinstance(node, exp.Anonymous):
        name = node.name.upper()
        return None if name in CHECKED_ANONYMOUS else name.lower()
    return None if type(node) in CHECKED_FUNCTIONS else node.sql_name().lower()

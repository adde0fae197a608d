"""The Spark functions whose DuckDB translation is checked.

A view's DuckDB text may call only these (as sqlglot parses them), each of which
`tests/spark/test_view_meaning.py` reads in both engines; any other function becomes a
DuckDB error naming it, so "never a silently different meaning" holds by construction.
The same test fails if this list names a function its corpus does not use. To add a
function: add a view body using it to the corpus, make both engines agree (a rule in
`duckdb_views.py` where they do not), then name it here.
"""

from __future__ import annotations

from sqlglot import exp

_CHECKED_NAMES = """
Abs Acos AddMonths AnyValue ApproxDistinct ArgMax ArgMin Array ArrayAgg ArrayContains
ArrayFilter ArrayMax ArrayMin ArrayPosition ArraySize ArraySlice ArraySort ArrayToString
ArrayUniqueAgg Ascii Asin Atan Atan2 Avg BitLength Case Cast Cbrt Ceil Coalesce Concat
ConcatWs Cos Count CountIf CovarPop CovarSamp CurrentDate CurrentTimestamp DateDiff
DateTrunc DayOfMonth DayOfWeek DayOfYear Degrees DenseRank Exists Exp Explode Extract
First FirstValue Floor GenerateSeries Greatest Hour If Initcap JSONExtractScalar
JSONFormat Lag LastDay Lead Least Left Length Ln Log LogicalAnd LogicalOr Lower LowerHex
MD5 Max Median Min Minute Month MonthsBetween Nanvl Ntile Nullif Nvl2 Pad PercentRank Pi
Pow Quarter Radians Rank Reduce RegexpExtract RegexpLike RegexpReplace RegexpSplit Repeat
Replace Reverse Right Round RowNumber SHA2 SafeDivide Second Sign Sin SplitPart Sqrt
Stddev StddevPop StrPosition StrToTime StrToUnix Struct Substring Sum Tan TimeStrToTime
TimeToStr TimestampAdd TimestampTrunc Transform Translate Trim TryCast TsOrDsAdd
TsOrDsToDate UnixToStr Upper VarMap Variance VariancePop WeekOfYear Year
"""

CHECKED_FUNCTIONS: frozenset[type[exp.Expression]] = frozenset(
    getattr(exp, name) for name in _CHECKED_NAMES.split()
)

# functions sqlglot does not know (exp.Anonymous), by upper-case name
CHECKED_ANONYMOUS = frozenset(
    {
        "ASSERT_TRUE",
        "CARDINALITY",
        "ISNOTNULL",
        "ISNULL",
        "MAKE_DATE",
        "OCTET_LENGTH",
        "RAISE_ERROR",
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

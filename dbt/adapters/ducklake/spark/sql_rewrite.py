"""Spark SQL text with lake references resolved in place.

A query's text is never regenerated: sqlglot (Spark dialect) finds the table references
and their offsets, and each lake reference — `schema.table`, `lake.schema.table`, quoted
names, with `VERSION AS OF n` or `TIMESTAMP AS OF '...'` — is replaced in the original
text by a temporary view of its scan; so are the change-feed table functions
`table_changes('t', start, end)`, `table_insertions`, `table_deletions` and
`information_schema` views. CTE names, Spark temp views and non-lake tables are left
alone. Inside a BEGIN … COMMIT block, reading a table the block changed is refused.
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from ..lake import CatalogReader, Lake, iso_datetime
from .catalog_queries import INFORMATION_SCHEMA, INFORMATION_SCHEMA_VIEWS, information_schema
from .changes import rows_as_changes, table_changes
from .errors import LakeSQLError
from .pushdown import pushed_predicates
from .scan import ScanMetrics, scan_table
from .sql_blocks import TransactionBlock
from .views import scan_relation

_ids = itertools.count()
# unreadable statements become exp.Command, reported by this module as an error; sqlglot
# would also print a warning for each on stderr
logging.getLogger("sqlglot").setLevel(logging.ERROR)
_TIME_TRAVEL = re.compile(
    r"\s+(?:FOR\s+)?(?:SYSTEM_)?(VERSION|TIMESTAMP)\s+AS\s+OF\s+"
    r"(\d+|'(?:[^']|'')*'|TIMESTAMP\s*'(?:[^']|'')*')",
    re.IGNORECASE,
)
FEED_FUNCTIONS = {
    f"{prefix}table_{feed}": feed
    for prefix in ("", "ducklake_")
    for feed in ("changes", "insertions", "deletions")
}
# every row of a table at a snapshot in the change feed's shape (each an insert):
# what ducklake_changes_since_last_build reads on a model's first build
FEED_FUNCTIONS["ducklake_table_rows"] = "rows"


@dataclass
class _Ref:
    start: int
    end: int  # exclusive, time-travel clause included
    schema: str
    name: str
    at: int | datetime | None
    node: exp.Table


class QueryRewriter:
    """Resolves the lake references of Spark SQL text for one lake (`catalog_name` is how
    SQL names it); `block` is the open BEGIN … COMMIT block, if any."""

    def __init__(
        self,
        spark: SparkSession,
        lake: Lake,
        block: TransactionBlock,
        *,
        default_schema: str,
        catalog_name: str,
    ):
        self.spark = spark
        self.lake = lake
        self.block = block
        self.default_schema = default_schema
        self.catalog_name = catalog_name
        # (table, what its scan planned) for each lake table the last query read
        self.last_scans: list[tuple[str, ScanMetrics]] = []
        self.written_as: dict[str, str] = {}  # temporary view -> the reference it replaced

    def query(self, text: str) -> DataFrame:
        """A Spark query with lake references resolved (the text otherwise untouched)."""
        return self.spark.sql(self.rewrite(text))

    def rewrite(self, text: str, tree: exp.Expression | None = None) -> str:
        """`text` with lake references resolved; `tree`: `text` parsed already."""
        tree = tree if tree is not None else parse(text)
        # a query of no tables (a VALUES list, literals) asks the catalog nothing
        cat = self.lake.catalog() if tree.find(exp.Table) is not None else None
        refs = self._lake_refs(tree, text, cat) if cat is not None else []
        spans: list[tuple[int, int, DataFrame]] = []
        self.last_scans = []
        for ref in refs:
            self.check_unchanged(ref.schema, ref.name, ref.at)
            spans.append((ref.start, ref.end, self._scan(ref)))
        spans += self._feed_calls(tree, text)
        if cat is not None:
            spans += self._information_schema(tree, cat)
        edits = []
        for start, end, df in spans:
            view = self._register(df)
            self.written_as[view] = text[start:end]  # errors name it as the user did
            edits.append((start, end, view))
        edits += _text_type_casts(text)
        out = text
        for start, end, replacement in sorted(edits, key=lambda s: s[0], reverse=True):
            out = out[:start] + replacement + out[end:]
        return out

    def _scan(self, ref: _Ref) -> DataFrame:
        """A table's scan prunes files by the query's filters on it; a view is expanded."""
        cat = self.lake.catalog(ref.at)
        table = cat.find_table(ref.schema, ref.name)
        if table is None:
            return scan_relation(self.spark, self.lake, ref.schema, ref.name, at=ref.at)
        metrics = ScanMetrics()
        df = scan_table(
            self.spark,
            self.lake,
            ref.schema,
            ref.name,
            predicates=lambda columns: pushed_predicates(
                ref.node, {c.name.lower(): c.type for c in columns}
            ),
            metrics=metrics,
            catalog=cat,
        )
        self.last_scans.append((f"{ref.schema}.{ref.name}", metrics))
        return df

    @staticmethod
    def _register(df: DataFrame) -> str:
        view = f"__ducklake_{next(_ids)}"
        df.createOrReplaceTempView(view)
        return view

    def _information_schema(
        self, tree: exp.Expression, cat: CatalogReader
    ) -> list[tuple[int, int, DataFrame]]:
        """`[lake.]information_schema.tables` and friends: DuckDB's views over the catalog."""
        spans = []
        for table in tree.find_all(exp.Table):
            db, catalog, name_id = table.args.get("db"), table.args.get("catalog"), table.this
            if db is None or db.name.lower() != INFORMATION_SCHEMA or "start" not in db.meta:
                continue
            if catalog is not None and catalog.name.lower() != self.catalog_name.lower():
                continue
            view = table.name.lower()
            if view not in INFORMATION_SCHEMA_VIEWS:
                known = ", ".join(INFORMATION_SCHEMA_VIEWS)
                raise LakeSQLError(f"information_schema.{view}: the lake answers {known}")
            df = information_schema(self.spark, self.lake, self.catalog_name, view, cat)
            start = (catalog or db).meta["start"]
            spans.append((start, name_id.meta["end"] + 1, df))
        return spans

    def check_unchanged(
        self, schema: str, name: str, at: int | datetime | None = None, *, dml: bool = False
    ) -> None:
        """Statements of a block read the lake as of BEGIN: reading a table the block
        already changed is refused. A DML target may follow ADD/DROP COLUMN (its rows
        are read in the new columns), not a change of its rows."""
        tx = self.block.tx
        if tx is None or at is not None:
            return
        changed = tx.has_new_rows_or_identity(schema, name) if dml else tx.has_changed(schema, name)
        if changed:
            raise LakeSQLError(
                f"{schema}.{name} was changed earlier in this transaction block; reading it "
                "again before COMMIT is not supported (the block sees the state at BEGIN). "
                "Commit first or reorder the statements."
            )

    def _feed_calls(self, tree: exp.Expression, text: str) -> list[tuple[int, int, DataFrame]]:
        """table_changes / table_insertions / table_deletions calls used as tables."""
        called = [
            t.this.name.lower()
            for t in tree.find_all(exp.Table)
            if isinstance(t.this, exp.Anonymous) and t.this.name.lower() in FEED_FUNCTIONS
        ]
        if not called:
            return []
        tokens = Spark().tokenizer().tokenize(text)
        spans = []
        for i, tok in enumerate(tokens):
            feed = FEED_FUNCTIONS.get(tok.text.lower())
            if (
                feed is None
                or i + 1 >= len(tokens)
                or tokens[i + 1].token_type != TokenType.L_PAREN
            ):
                continue
            start = tok.start
            if i >= 2 and tokens[i - 1].token_type == TokenType.DOT:
                if tokens[i - 2].text.lower() != self.catalog_name.lower():
                    continue
                start = tokens[i - 2].start
            depth, j = 0, i + 1
            while j < len(tokens):
                depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[j].token_type, 0)
                if depth == 0:
                    break
                j += 1
            call = parse(text[tok.start : tokens[j].end + 1])
            spans.append((start, tokens[j].end + 1, self._feed(feed, call)))
        return spans

    def _feed(self, feed: str, call: exp.Expression) -> DataFrame:
        args = list(call.expressions) if isinstance(call, exp.Anonymous) else []
        usage = f"table_{feed}('[schema.]table', start, end)"
        counts: tuple[int, ...] = (2, 3)
        if feed == "rows":
            usage, counts = "ducklake_table_rows('[schema.]table', snapshot)", (2,)
        named = isinstance(args[0], exp.Literal) and args[0].is_string if args else False
        if len(args) not in counts or not named:
            raise LakeSQLError(f"{usage}: got {call.sql(dialect='spark')}")
        parts = args[0].name.split(".")
        schema, name = (parts[0], parts[1]) if len(parts) == 2 else (self.default_schema, parts[0])
        bounds = [self._bound(a) for a in args[1:]]
        if feed == "rows":
            return rows_as_changes(self.spark, self.lake, schema, name, bounds[0])
        return table_changes(
            self.spark,
            self.lake,
            schema,
            name,
            bounds[0],
            bounds[1] if len(bounds) > 1 else None,
            feed=feed,
        )

    def _bound(self, arg: exp.Expression) -> int | datetime:
        """A snapshot id or a time: literals directly, other expressions evaluated by Spark."""
        if isinstance(arg, exp.Literal) and not arg.is_string:
            return int(arg.name)
        if isinstance(arg, exp.Literal):
            return travel_target("TIMESTAMP", f"'{arg.name}'")
        value = self.spark.sql(f"SELECT {arg.sql(dialect='spark')}").first()
        result = value[0] if value is not None else None
        if isinstance(result, int):
            return result
        if isinstance(result, datetime):
            return result if result.tzinfo else result.replace(tzinfo=timezone.utc)
        raise LakeSQLError(f"change feed bound {arg.sql(dialect='spark')} is not an id or a time")

    def _lake_refs(self, tree: exp.Expression, text: str, cat: CatalogReader) -> list[_Ref]:
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        relations = {(t.schema_name, t.name) for t in cat.tables()}
        relations |= {(v.schema_name, v.name) for v in cat.views()}
        refs = []
        created = _temp_view_created(tree)
        for table in tree.find_all(exp.Table):
            name_id = table.this
            if table is created:  # the view's name, not a read of the lake's relation
                continue
            if not isinstance(name_id, exp.Identifier) or "start" not in name_id.meta:
                continue
            db, catalog = table.args.get("db"), table.args.get("catalog")
            if catalog is not None and catalog.name.lower() != self.catalog_name.lower():
                continue
            schema = db.name if db is not None else self.default_schema
            if (schema, table.name) not in relations:
                continue
            # a CTE or a temporary view of the same name hides the lake's relation; asking
            # Spark for views costs a py4j call, so only names the lake has are asked
            if db is None and (table.name.lower() in ctes or self.is_spark_view(table.name)):
                continue
            first = catalog or db or name_id
            start = first.meta["start"]
            end = name_id.meta["end"] + 1  # offsets include quotes of quoted names
            at = None
            travel = _TIME_TRAVEL.match(text, end)
            if travel is not None:
                at = travel_target(travel.group(1), travel.group(2))
                end = travel.end()
            refs.append(_Ref(start, end, schema, table.name, at, table))
        return refs

    def is_spark_view(self, name: str) -> bool:
        try:
            return bool(self.spark.catalog.tableExists(name))
        except Exception:  # Connect sessions without a catalog answer: assume not
            return False


def _temp_view_created(tree: exp.Expression) -> exp.Table | None:
    """The name a CREATE TEMPORARY VIEW gives its view."""
    if not isinstance(tree, exp.Create) or tree.find(exp.TemporaryProperty) is None:
        return None
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    return target if isinstance(target, exp.Table) else None


def _text_type_casts(text: str) -> list[tuple[int, int, str]]:
    """`x::text` and `CAST(x AS text)` (PostgreSQL's string type, common in dbt SQL) as
    Spark's `string`; Spark has no TEXT type, so valid Spark SQL is never changed."""
    tokens = Spark().tokenizer().tokenize(text)
    out = []
    for i, tok in enumerate(tokens):
        if tok.token_type != TokenType.TEXT or i == 0:
            continue
        before = tokens[i - 1].token_type
        after = tokens[i + 1].token_type if i + 1 < len(tokens) else None
        if before == TokenType.DCOLON or (before == TokenType.ALIAS and after == TokenType.R_PAREN):
            out.append((tok.start, tok.end + 1, "string"))
    return out


_MISSING = re.compile(r"Required keyword: '\w+' missing for <class '[\w.]*?\.(\w+)'>")
_TOKEN = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: .*?>")


def _tokens_told(message: str) -> str:
    """The parser's token objects as the word the user wrote: a keyword where a name
    goes (a model named `select`) says how to use it as a name."""

    def told(m: re.Match[str]) -> str:
        kind, word = m.group(1), m.group(2)
        if kind == "SENTINEL":
            return "the end of the statement"
        if kind.lower() != word.lower():
            return repr(word)
        return f"the reserved word {word!r} (quote it as `{word}`, or give the model an alias)"

    # sqlglot's own classes say which construct is unfinished: `where (` → paren
    message = _MISSING.sub(lambda m: f"an incomplete {m.group(1).lower()}", message)
    return _TOKEN.sub(told, message)


def parse(text: str) -> exp.Expression:
    try:
        parsed = sqlglot.parse(text, read="spark")
    except sqlglot.errors.ParseError as exc:  # its first line names the problem and place
        raise LakeSQLError(f"SQL syntax error: {_tokens_told(str(exc).splitlines()[0])}") from exc
    statements = [s for s in parsed if s is not None]
    if len(statements) != 1:
        raise LakeSQLError(f"expected one SQL statement, got {len(statements)}")
    tree = statements[0]
    assert isinstance(tree, exp.Expression)
    return tree


def travel_target(kind: str, value: str) -> int | datetime:
    if kind.upper() == "VERSION":
        if not value.isdigit():
            raise LakeSQLError(f"VERSION AS OF takes a snapshot id, got {value}")
        return int(value)
    literal = value.split("'", 1)[1].rsplit("'", 1)[0].replace("''", "'")
    try:
        stamp = iso_datetime(literal)
    except ValueError:
        raise LakeSQLError(
            f"TIMESTAMP AS OF {literal!r} is not a timestamp; write it like "
            "'2026-01-31 12:00:00' or '2026-01-31T12:00:00+00:00'"
        ) from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)

"""A parsed MERGE statement as the engine's arguments: its WHEN clauses, and column
references made to name the sides by their aliases."""

from __future__ import annotations

from sqlglot import exp

from .errors import LakeSQLError
from .merge import When

__all__ = ["unqualify", "when_clauses"]


def when_clauses(tree: exp.Merge) -> list[When]:
    """The WHEN clauses of a parsed MERGE, in order, as the engine takes them."""
    clauses = []
    whens = tree.args.get("whens")
    for w in whens.expressions if whens is not None else tree.expressions:
        matched = bool(w.args.get("matched"))
        by_source = bool(w.args.get("source"))
        kind = "matched" if matched else ("not_matched_by_source" if by_source else "not_matched")
        cond = w.args.get("condition")
        then = w.args.get("then")
        condition = cond.sql(dialect="spark") if cond is not None else None
        if isinstance(then, exp.Update):
            values = (
                None
                if then.expressions == [exp.Star()] or not then.expressions
                else {e.this.name: e.expression.sql(dialect="spark") for e in then.expressions}
            )
            clauses.append(When(kind, "update", condition, values))
        elif isinstance(then, exp.Insert):
            cols, vals = then.this, then.expression
            if isinstance(cols, exp.Star) or cols is None:
                clauses.append(When(kind, "insert", condition, None))
            else:
                names = [c.name for c in cols.expressions]
                exprs = [v.sql(dialect="spark") for v in vals.expressions]
                clauses.append(
                    When(kind, "insert", condition, dict(zip(names, exprs, strict=True)))
                )
        elif isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            clauses.append(When(kind, "delete", condition))
        else:
            raise LakeSQLError(f"MERGE clause {w.sql(dialect='spark')!r} is not supported")
    return clauses


def unqualify(tree: exp.Merge, *sides: tuple[exp.Expression, str]) -> None:
    """`schema.table.column` (valid in Spark and DuckDB when a MERGE side has no alias)
    becomes `alias.column`, the form the engine resolves."""
    for column in tree.find_all(exp.Column):
        db = column.args.get("db")
        if db is None:
            continue
        for side, alias in sides:
            if not isinstance(side, exp.Table) or side.alias:
                continue
            same_table = column.table.lower() == side.name.lower()
            side_db = side.args.get("db")
            if same_table and (side_db is None or side_db.name.lower() == db.name.lower()):
                column.set("db", None)
                column.set("catalog", None)
                column.set("table", exp.to_identifier(alias))
                break

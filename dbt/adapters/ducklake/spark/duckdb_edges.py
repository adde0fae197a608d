"""Spark's meaning at the edges of functions whose everyday DuckDB form is sqlglot's:
positions of zero or below, negative lengths, empty pads, split limits, Java's regex
replacement syntax, arrays among concat_ws's strings. Literal arguments whose meaning
is the same in both engines keep sqlglot's form as it is."""

from __future__ import annotations

import re

from sqlglot import exp

from .duckdb_functions import Rule, duck, unsupported


def _positive(node: exp.Expression | None) -> bool:
    """Whether `node` is a literal integer above zero."""
    return isinstance(node, exp.Literal) and node.is_int and int(node.name) > 0


def _not_negative(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Literal) and node.is_int and int(node.name) >= 0


def _substring(node: exp.Expression) -> exp.Expression:
    """substring(s, pos[, len]) as Spark counts: pos 0 is 1, a negative pos counts from
    the end, and the characters kept are those of [pos, pos + len) within the string (a
    start before the string shortens what len reaches; DuckDB shifts it instead)."""
    start, length = node.args.get("start"), node.args.get("length")
    if start is None or (_positive(start) and (length is None or _not_negative(length))):
        return node
    # 0-based, before it is clamped to the string
    first = "CASE WHEN {p} > 0 THEN {p} - 1 WHEN {p} < 0 THEN length({s}) + {p} ELSE 0 END"
    if length is None:
        return duck(f"substring({{s}}, greatest({first}, 0) + 1)", s=node.this, p=start)
    return duck(
        f"CASE WHEN greatest({first}, 0) >= ({first}) + {{n}} THEN CASE WHEN {{s}} IS NOT NULL "
        f"THEN '' END ELSE substring({{s}}, greatest({first}, 0) + 1, "
        f"({first}) + {{n}} - greatest({first}, 0)) END",
        s=node.this,
        p=start,
        n=length,
    )


def _left_right(node: exp.Expression) -> exp.Expression:
    """left / right of n <= 0 characters is '' (DuckDB drops -n from the other end)."""
    if _positive(node.expression):
        return node
    return duck(
        "CASE WHEN {s} IS NULL OR {n} IS NULL THEN NULL WHEN {n} <= 0 THEN '' ELSE {call} END",
        s=node.this,
        n=node.expression,
        call=node,
    )


def _locate(node: exp.Expression) -> exp.Expression:
    """locate(sub, s, pos): 0 for a NULL pos or one below 1, 1 for an empty sub."""
    position = node.args.get("position")
    if position is None:
        return node  # instr / position: DuckDB's strpos
    return duck(
        "CASE WHEN {p} IS NULL THEN 0 WHEN {sub} IS NULL OR {s} IS NULL THEN NULL "
        "WHEN {p} < 1 THEN 0 WHEN {sub} = '' THEN 1 ELSE {call} END",
        p=position,
        sub=node.args["substr"],
        s=node.this,
        call=node,
    )


def _pad(node: exp.Expression) -> exp.Expression:
    """lpad / rpad with an empty pad keep the string (up to len characters), where
    DuckDB fails; a negative len is ''."""
    fill = node.args.get("fill_pattern")
    length = node.expression
    literal_fill = isinstance(fill, exp.Literal) and fill.is_string and fill.name
    if literal_fill and _not_negative(length):
        return node
    return duck(
        "CASE WHEN {s} IS NULL OR {n} IS NULL OR {f} IS NULL THEN NULL "
        "WHEN {n} <= 0 THEN '' WHEN {f} = '' THEN left({s}, {n}) ELSE {call} END",
        s=node.this,
        n=length,
        f=fill if fill is not None else exp.Literal.string(" "),
        call=node,
    )


def _split(node: exp.Expression) -> exp.Expression:
    """split(s, regex, limit): a limit of 0 or below is no limit; DuckDB has no form of a
    positive one."""
    limit = node.args.get("limit")
    if limit is None:
        return node
    negative = isinstance(limit, exp.Neg)
    literal = limit.this if negative else limit
    value = None
    if isinstance(literal, exp.Literal) and literal.is_int:
        value = -int(literal.name) if negative else int(literal.name)
    if value is None or value > 0:
        return unsupported("split with a limit")
    node.set("limit", None)
    return node


_JAVA_GROUP = re.compile(r"\$(\d)(?!\d)")


def _replacement(text: str) -> str | None:
    """Java's replacement syntax ($1 a group, a backslash quoting the next character) in
    RE2's (\\1 a group, a backslash itself written twice); None where it has no form."""
    out = []
    k = 0
    while k < len(text):
        c = text[k]
        if c == "\\" and k + 1 < len(text):
            out.append("\\\\" if text[k + 1] == "\\" else text[k + 1])
            k += 2
        elif c == "$":
            group = _JAVA_GROUP.match(text, k)
            if group is None:
                return None  # ${name}, $12, a lone $: Java fails or means more
            out.append("\\" + group.group(1))
            k += 2
        elif c == "\\":
            return None  # a trailing backslash: Java fails
        else:
            out.append(c)
            k += 1
    return "".join(out)


def _regexp_replace(node: exp.Expression) -> exp.Expression:
    """regexp_replace's replacement in Java's syntax, rewritten in RE2's."""
    replacement = node.args.get("replacement")
    if replacement is None:
        return node
    if not (isinstance(replacement, exp.Literal) and replacement.is_string):
        construct = "regexp_replace with a replacement that is not a literal"
        return unsupported(construct)
    text = _replacement(replacement.name)
    if text is None:
        return unsupported("this regexp_replace replacement")
    node.set("replacement", exp.Literal.string(text))
    return node


# a DOUBLE Spark writes in exponent notation (DuckDB writes digits), as _AS_TEXT has it
_EXPONENT = (
    "(typeof({x}) IN ('DOUBLE', 'FLOAT') AND (abs(TRY_CAST(CAST({x} AS VARCHAR) AS DOUBLE))"
    " >= 1e7 OR (abs(TRY_CAST(CAST({x} AS VARCHAR) AS DOUBLE)) < 1e-3"
    " AND TRY_CAST(CAST({x} AS VARCHAR) AS DOUBLE) <> 0)))"
)


def _concatenation(call: exp.Expression, operands: list[exp.Expression]) -> exp.Expression:
    """concat, || and concat_ws write their operands as Spark's CAST to STRING does:
    DuckDB refuses a TIMESTAMP (written with its zone in DuckDB), an array among
    concat_ws's strings (whose elements Spark joins) and, in a row, a DOUBLE Spark writes
    in exponent notation."""
    columns = {f"x{k}": o for k, o in enumerate(operands) if not isinstance(o, exp.Literal)}
    if not columns:
        return call
    names = ["{" + name + "}" for name in columns]
    stamp = " OR ".join(f"typeof({x}) = 'TIMESTAMP WITH TIME ZONE'" for x in names)
    cases = [f"WHEN {stamp} THEN {unsupported('concatenating a TIMESTAMP').sql('duckdb')}"]
    if isinstance(call, exp.ConcatWs):
        arrays = " OR ".join(f"typeof({x}) LIKE '%[]'" for x in names)
        cases.append(f"WHEN {arrays} THEN {unsupported('concat_ws of an array').sql('duckdb')}")
    exponent = " OR ".join(_EXPONENT.replace("{x}", x) for x in names)
    refusal = unsupported("concatenating this double").sql("duckdb")
    cases.append(f"WHEN {exponent} THEN {refusal}")
    return duck(f"CASE {' '.join(cases)} ELSE {{call}} END", call=call, **columns)


def _concat(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.DPipe):
        return _concatenation(node, [node.this, node.expression])
    if isinstance(node, exp.ConcatWs):
        return _concatenation(node, node.expressions[1:])
    return _concatenation(node, node.expressions)


def _slice(node: exp.Expression) -> exp.Expression:
    """slice(a, start, len) fails for start 0 or a negative len (Spark, ANSI), where
    DuckDB answers."""
    start, length = node.args["start"], node.args["end"]
    if not node.args.get("is_length"):
        return node
    literal_start = _positive(start.this if isinstance(start, exp.Neg) else start)
    if literal_start and _not_negative(length):
        return node
    return duck(
        "CASE WHEN {a} IS NULL OR {p} IS NULL OR {n} IS NULL THEN NULL "
        "WHEN {p} = 0 THEN error('[INVALID_PARAMETER_VALUE.START] slice from 0') "
        "WHEN {n} < 0 THEN error('[INVALID_PARAMETER_VALUE.LENGTH] slice of a negative length') "
        "ELSE {call} END",
        a=node.this,
        p=start,
        n=length,
        call=node,
    )


EDGE_RULES: dict[type[exp.Expression], Rule] = {
    exp.Substring: _substring,
    exp.Left: _left_right,
    exp.Right: _left_right,
    exp.StrPosition: _locate,
    exp.Pad: _pad,
    exp.RegexpSplit: _split,
    exp.RegexpReplace: _regexp_replace,
    exp.Concat: _concat,
    exp.ConcatWs: _concat,
    exp.DPipe: _concat,
    exp.ArraySlice: _slice,
}

"""Which schema, table and view names the lake accepts.

dbt writes `schema.table` in its SQL, and the lake's own statements split names on
dots and quotes, so a name with `/`, `.`, `..` or a quote in it could not be spelled
back (a path-unsafe name gets a uuid folder, as in DuckDB, so files stay in place
either way). DuckDB accepts such names when quoted: this layer refuses to create them
and reads lakes that have them all the same.
"""

from __future__ import annotations

from .errors import InvalidChangeError

MAX_NAME_LENGTH = 128
FORBIDDEN = "/\\.\"'`"
ACCEPTED_NAMES = (
    f"1 to {MAX_NAME_LENGTH} characters, none of / \\ . \" ' ` or control characters, "
    "no leading or trailing spaces"
)


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a schema, table or view; None when it can."""
    if not name or not name.strip():
        return "it is empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"it has {len(name)} characters"
    if name != name.strip():
        return "it starts or ends with a space"
    bad = sorted({ch for ch in name if ch in FORBIDDEN or not ch.isprintable()})
    if bad:
        return "it contains " + " ".join(repr(ch) for ch in bad)
    return None


def check_name(kind: str, name: str) -> None:
    if not name or not name.strip():
        raise InvalidChangeError(f"{kind} name must not be empty")
    if kind == "column":  # column names live inside files, never in paths
        return
    problem = name_problem(name)
    if problem is not None:
        raise InvalidChangeError(
            f"{kind} name {name[:60]!r}{'…' if len(name) > 60 else ''} is not accepted: "
            f"{problem}; accepted: {ACCEPTED_NAMES}"
        )

"""Keep passwords out of every message: errors, logs, `dbt debug`.

Masking happens twice: by shape (a URL's `user:password@`, libpq's `password=…`), which
catches a secret in any string the user wrote, and by value (`Secrets.mask`), which
catches the same secret where a driver or Spark echoes it in its own words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

MASK = "***"

# Spark's own `spark.redaction.regex` default: conf keys whose values the UI hides
SECRET_KEY = re.compile(r"(?i)secret|password|token|access[.]?key|credential")

_URL_PASSWORD = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)(?P<pw>(?!\*\*\*@)[^@\s]*)@"
)
_LIBPQ_PASSWORD = re.compile(
    r"(?i)(?P<head>\bpassword\s*=\s*)(?P<pw>(?!\*\*\*)(?:'(?:[^'\\]|\\.)*'|[^\s']+))"
)

# shorter values would mask ordinary words; shape-based masking still covers them
_MIN_VALUE_LENGTH = 3


def mask_shapes(text: str) -> str:
    """`scheme://user:pw@` and `password=pw` with the password replaced."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK + "@", text)
    return _LIBPQ_PASSWORD.sub(lambda m: m.group("head") + MASK, text)


def passwords_in(text: str) -> list[str]:
    """The passwords a metadata string carries, as written (libpq quotes removed)."""
    found: list[str] = []
    for m in _URL_PASSWORD.finditer(text):
        # drivers echo the decoded form; the URL itself is masked by shape
        found += [m.group("pw"), unquote(m.group("pw"))]
    for m in _LIBPQ_PASSWORD.finditer(text):
        value = m.group("pw")
        if value.startswith("'"):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        found.append(value)
    return [f for f in found if f]


@dataclass(frozen=True)
class Secrets:
    """The secret values of one profile; `mask` removes them from any text."""

    values: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        metadata: str,
        conf: Mapping[str, object] | None = None,
        others: Iterable[str | None] = (),
    ) -> Secrets:
        """The secrets of a metadata string, of `conf`'s secret-named keys, and `others`
        (an S3 secret key, whether from the profile or the environment)."""
        values = set(passwords_in(metadata or ""))
        values.update(v for v in others if v)
        for key, value in (conf or {}).items():
            if SECRET_KEY.search(str(key)) and value is not None:
                values.add(str(value))
        # longest first, so a secret containing another is masked whole
        kept = sorted((v for v in values if len(v) >= _MIN_VALUE_LENGTH), key=len, reverse=True)
        return cls(tuple(kept))

    def mask(self, text: str) -> str:
        text = mask_shapes(text)
        for value in self.values:
            text = text.replace(value, MASK)
        return text

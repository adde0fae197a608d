"""The README, docs/ and the contributor files link only to files and headings that
exist (relative links; web links are not fetched)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _documents() -> list[Path]:
    top = [ROOT / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")]
    return [*top, *sorted((ROOT / "docs").glob("*.md"))]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    found, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#+ (.*)", line)):
            found.add(_anchor(m.group(1)))
    return found


def broken_links(documents: list[Path], root: Path = ROOT) -> list[str]:
    broken, fenced = [], False
    for doc in documents:
        for number, line in enumerate(doc.read_text().splitlines(), start=1):
            if line.startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # https:, mailto:
                    continue
                file, _, anchor = target.partition("#")
                path = (doc.parent / file).resolve() if file else doc
                where = f"{doc.relative_to(root)}:{number}: {target}"
                missing = not path.exists()
                if missing or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
                    broken.append(where)
    return broken


def test_no_broken_relative_link() -> None:
    documents = _documents()
    assert len(documents) >= 6 and all(d.exists() for d in documents)
    assert broken_links(documents) == []


def test_the_link_check_would_catch_a_missing_file_or_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Some heading\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](other.md#some-heading) [gone](missing.md) [no heading](other.md#nope)\n"
        "```\n[in code](ignored.md)\n```\n[web](https://example.com)\n"
    )
    found = [b.split(": ", 1)[1] for b in broken_links([doc], tmp_path)]
    assert found == ["missing.md", "other.md#nope"]

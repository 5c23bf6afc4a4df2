"""The docs hold together: every relative link in README.md and docs/*.md reaches an existing
file (and, when it names one, a heading of that file), and the README stays a short map."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 150

# [text](target) and ![alt](target), the target up to a space (a title) or the closing ")".
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code removed."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(INLINE_CODE.sub("", line))
    return lines


def relative_links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    targets = [m.group(1) for line in prose_lines(text) for m in LINK.finditer(line)]
    return [t for t in targets if not SCHEME.match(t)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(0).strip("`"), heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    headings = [
        line.lstrip("#").strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"^#{1,6} ", line)
    ]
    return {slug(h) for h in headings}


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    return broken


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


def test_the_docs_folder_has_pages_and_the_readme_links_them() -> None:
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert pages
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in relative_links(ROOT / "README.md")}
    assert [p.name for p in pages if p.resolve() not in linked] == []


def test_the_readme_is_under_150_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES, len(lines)


def test_the_link_checker_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n[ok](page.md#a-page) [gone](missing.md) [web](https://example.org)\n"
        "[no heading](page.md#nowhere)\n```\n[in code](missing-too.md)\n```\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["page.md#a-page", "missing.md", "page.md#nowhere"]
    assert broken_links(page) == [
        "missing.md: no such file",
        "page.md#nowhere: no heading #nowhere in page.md",
    ]
    assert slug("What the workers' Docker socket grants — read before deploying") == (
        "what-the-workers-docker-socket-grants--read-before-deploying"
    )

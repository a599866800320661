"""Every relative link in README.md and docs/*.md resolves: the file it names exists, and a `#fragment` names a
heading of that page (GitHub's anchors). External links (http, https, mailto) are not fetched."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    """The page without its code: a link shown in a code block or in backticks is no link."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, a
    repeated heading numbered (-1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for title in HEADING.findall(FENCE.sub("", text)):
        slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(page: Path) -> list[str]:
    """Each relative link of `page` that does not resolve, with why."""
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(_prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file {dest}")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text(encoding="utf-8")):
            broken.append(f"{target}: {dest.name} has no heading with the anchor #{fragment}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert not broken_links(page), f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(broken_links(page))


def test_the_readme_links_every_guide() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {t.partition("#")[0] for t in LINK.findall(_prose(readme))}
    guides = {f"docs/{p.name}" for p in PAGES if p.parent.name == "docs"}
    assert guides <= linked, f"guides the README does not link: {sorted(guides - linked)}"


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# A guide\n\n## What `kit init` writes\n\ntext\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/guide.md#what-kit-init-writes) [web](https://example.invalid/x) `[code](nowhere.md)`\n"
        "[gone](docs/missing.md) [bad anchor](docs/guide.md#no-such-heading) [self](#nothing-here)\n"
        "```\n[in a block](also-nowhere.md)\n```\n"
    )
    assert broken_links(page) == [
        f"docs/missing.md: no such file {tmp_path / 'docs' / 'missing.md'}",
        "docs/guide.md#no-such-heading: guide.md has no heading with the anchor #no-such-heading",
        "#nothing-here: README.md has no heading with the anchor #nothing-here",
    ]

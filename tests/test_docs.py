"""The README is a guide and docs/ holds the depth: every relative link in README.md and docs/*.md names a file
that exists (and, with a #fragment into a Markdown page, one of its headings), the README stays short, and its
test command is the one CI runs."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a Markdown link or image ](target) and an HTML src="target" / href="target"
LINK = re.compile(r"\]\(([^)\s]+)\)|\b(?:src|href)=\"([^\"]+)\"")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
README_LINES = 150  # the "at most about 150 lines"


def links(page):
    """(target, line number) of each link in `page` outside its code blocks."""
    text = page.read_text(encoding="utf-8")
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # keep the line numbers
    for n, line in enumerate(text.splitlines(), 1):
        for m in LINK.finditer(line):
            yield m.group(1) or m.group(2), n


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


def anchors(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_points_at_a_file_that_exists(page):
    broken = []
    for target, n in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"line {n}: {target} (no {dest.relative_to(ROOT) if ROOT in dest.parents else dest})")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"line {n}: {target} (no heading #{fragment} in {dest.name})")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_the_checks_find_a_broken_link_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A heading\n\n[ok](#a-heading) [gone](missing.md) [no such](#nowhere) <img src=\"x.png\">\n"
                    "```\n[in code](not-checked.md)\n```\n")
    assert [t for t, _ in links(page)] == ["#a-heading", "missing.md", "#nowhere", "x.png"]
    assert anchors(page) == {"a-heading"}
    assert slug("The Space's configuration") == "the-spaces-configuration"
    assert slug("Every state by name: the instrumented run") == "every-state-by-name-the-instrumented-run"


def test_the_readme_is_a_guide_with_the_space_front_matter_at_its_top():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\ntitle: Transformer Explorer\n")
    assert len(text.splitlines()) <= README_LINES
    assert "(docs/screenshot.png)" in text and "docs/screenshot-phone-zh.png" in text


def test_ci_runs_the_readmes_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^bash scripts/test\.sh\b", readme, re.M)
    assert re.search(r"^bash scripts/test\.sh\b", ci, re.M)

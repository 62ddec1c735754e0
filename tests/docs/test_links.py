"""The README and docs/ stand alone: every relative link (and code-span path to a file of
the repository) resolves inside a clone — no ``../shared/`` files that only the authors'
checkout has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = [
        target for target in LINK.findall(text) if "://" not in target and not (page.parent / target).exists()
    ]
    assert broken == [], f"{page.name} links to missing files: {broken}"


def test_the_readme_names_no_file_outside_the_repository() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "../" not in text and "DESIGN.md" not in text  # was: `../shared/DESIGN.md`, seeds


def test_the_readme_install_line_does_what_make_install_does() -> None:
    """The README's install without make: the same extras and the same tools scripts as the
    Makefile's install recipe."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    line = readme.split("Without `make`:", 1)[1].split("\n", 2)[1]
    recipe = makefile.split("$(STAMP): pyproject.toml", 1)[1].split("touch $(STAMP)", 1)[0]
    extras = re.compile(r'-e "\.\[([^\]]*)\]"')
    assert extras.findall(line) == extras.findall(recipe)
    tools = re.compile(r"tools/[\w.-]+")
    assert tools.findall(line) == tools.findall(recipe)

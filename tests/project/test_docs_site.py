"""The documentation site holds together: an API page for every public package, every page in
the nav, a site that needs no network, and a README that stays a short front door whose links
reach the pages."""

from __future__ import annotations

import re

from locations import REPO

DOCS = REPO / "docs"
SRC = REPO / "src" / "promptimus"
MKDOCS = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")


def public_packages() -> list[str]:
    return sorted(
        path.name
        for path in SRC.iterdir()
        if path.is_dir() and not path.name.startswith("_") and (path / "__init__.py").exists()
    )


def test_every_public_package_has_an_api_page_in_the_nav() -> None:
    packages = public_packages()
    assert {"agents", "core", "durable", "sessions", "testing"} <= set(packages)
    for package in packages:
        page = DOCS / "api" / f"{package}.md"
        assert page.exists(), f"docs/api/{package}.md is missing"
        assert f"::: promptimus.{package}" in page.read_text(encoding="utf-8")
        assert f"api/{package}.md" in MKDOCS, f"api/{package}.md is not in mkdocs.yml's nav"


def test_every_page_is_in_the_nav() -> None:
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert [page for page in pages if page not in MKDOCS] == []


def test_the_site_needs_no_network() -> None:
    assert re.search(r"^\s*font:\s*false", MKDOCS, re.MULTILINE)  # no web fonts
    assert "extra_javascript" not in MKDOCS and "extra_css" not in MKDOCS
    assert "strict: true" in MKDOCS


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 200
    commands = [
        "python3 -m pip install -q uv && python3 -m uv run --no-dev examples/quickstart.py",
        "python3 -m pip install -q uv && python3 -m uv run pytest",
    ]
    assert all(command in README for command in commands)
    assert "DESIGN.md" not in README
    assert "0.1.26" in README  # what PyPI's promptimus is
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", README)
    assert len(links) >= 20
    assert [link for link in links if not (REPO / link).exists()] == []


def test_no_page_points_at_a_file_outside_the_repository() -> None:
    for page in DOCS.rglob("*.md"):
        assert "DESIGN.md" not in page.read_text(encoding="utf-8"), page


def test_the_docs_build_needs_only_the_docs_group() -> None:
    # the README's and the about page's commands install the `docs` group alone (MkDocs and its
    # plugins), not the dev group's databases, Ray and Phoenix
    about = (DOCS / "about.md").read_text(encoding="utf-8")
    for page in (README.replace("\n", " "), about):
        commands = re.findall(r"uv run [^`#\n]*mkdocs (?:serve|build)", page)
        assert commands, "no docs command found"
        assert all("--only-group docs" in command for command in commands), commands

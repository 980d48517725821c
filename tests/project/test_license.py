"""The licence the package declares is in the repository, as its text."""

from __future__ import annotations

import tomllib

from locations import REPO


def test_the_mit_licence_declared_in_pyproject_is_shipped() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert declared["project"]["license"] == "MIT"
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Copyright (c) The promptimus authors" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text

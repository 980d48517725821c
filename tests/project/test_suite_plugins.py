"""The suite starts with the pytest plugins it uses and no other: third-party plugins that the
environment happens to hold (arize-phoenix's takes tens of seconds to import) stay out."""

from __future__ import annotations

import pytest


def test_the_plugins_the_suite_uses_are_loaded(pytestconfig: pytest.Config) -> None:
    plugins = pytestconfig.pluginmanager
    assert plugins.has_plugin("asyncio")  # async def tests
    assert plugins.has_plugin("promptimus")  # the fake_openai fixtures
    assert plugins.has_plugin("hypothesispytest")


def test_the_fake_server_fixture_is_available(fake_openai: object) -> None:
    assert fake_openai is not None


def test_third_party_plugins_are_not_loaded(pytestconfig: pytest.Config) -> None:
    plugins = pytestconfig.pluginmanager
    assert not plugins.has_plugin("phoenix")
    assert not plugins.has_plugin("anyio")

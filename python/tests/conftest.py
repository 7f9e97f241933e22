"""pytest configuration: fixtures shared by the tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["dict", "bytes", "str", "async"])
def host_style(request: pytest.FixtureRequest) -> str:
    """Every host style."""
    return str(request.param)

"""The README's examples run as written, and so does the typed example."""

from __future__ import annotations

import runpy
from pathlib import Path

from readme_examples import run_readme_examples

HERE = Path(__file__).resolve().parent


def test_readme_examples_run_from_outside_the_repository() -> None:
    # Each example as `python example-N.py` in a fresh directory, with the
    # variables the README says to set; what it shows it prints is checked.
    assert run_readme_examples() >= 2


def test_typed_usage_runs() -> None:
    runpy.run_path(str(HERE / "typed_usage.py"), run_name="__main__")

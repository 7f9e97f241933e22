"""The README's example runs as written, and so does the typed example."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"


FOREIGN = HERE.parent.parent / "tests" / "fixtures" / "foreign-logs"


def test_readme_example_runs(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSR_FOREIGN_FIXTURES", str(FOREIGN))
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has no Python example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "@[Code style](dsh-session:ImRlc2lnbiI)" in out
    # The SessionSources example: the newest foreign session, and the
    # current view of a compacted Claude Code transcript.
    assert "claude-code:session_id_steering_order - Please start the migration." in out
    assert "Final answer" in out and "Second attempt" not in out


def test_typed_usage_runs() -> None:
    runpy.run_path(str(HERE / "typed_usage.py"), run_name="__main__")

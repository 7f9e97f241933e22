"""SessionSources: DSH, Claude Code and Codex sessions on disk through one query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh_session_reference import Resolver, SessionSources

REPO = Path(__file__).resolve().parent.parent.parent
FOREIGN = REPO / "tests" / "fixtures" / "foreign-logs"
DSH = REPO / "examples" / "sessions"


def sources() -> SessionSources:
    return SessionSources(
        [
            {"kind": "claude-code", "root": FOREIGN / "claude-code"},
            {"kind": "codex", "root": str(FOREIGN / "codex" / "daaain")},
            {"kind": "dsh", "root": DSH},
        ]
    )


def test_lists_every_source_newest_first_and_reads_each() -> None:
    s = sources()
    assert [k for k, _ in s.sources] == ["claude-code", "codex", "dsh"]
    listed = s.list_sessions()
    ids = [h["id"] for h in listed]
    assert "claude-code:system_reminder" in ids and "codex:11111111-1111-4111-8111-111111111111" in ids
    assert "goal-wrapup" in ids
    created = [h["createdAt"] for h in listed]
    assert created == sorted(created, reverse=True)
    assert [r["name"] for r in s.last_report()] == ["claude-code", "codex", "dsh"]
    assert s.read_title("codex:11111111-1111-4111-8111-111111111111") == "List the synthetic files."
    snapshot = json.loads(s.read_surface("claude-code:dag_compact_after_rewind"))
    assert snapshot["capturedThroughSeq"] == 11
    assert snapshot["conversation"] == [
        {
            "role": "user",
            "text": "This session is being continued from a previous conversation that ran out of "
            "context. Summary: the user asked for a plan.",
            "checkpoint": True,
        },
        {"role": "user", "text": "After compaction"},
        {"role": "assistant", "text": "Final answer"},
    ]
    assert "events" in json.loads(s.read_surface("goal-wrapup"))
    with pytest.raises(OSError, match="no Codex session"):
        s.read_surface("codex:nope")


def test_a_resolver_over_sources_prepares_foreign_and_dsh_sessions() -> None:
    r = Resolver(sources())
    p = r.prepare(
        {"id": "new"},
        [],
        [{"sessionId": "claude-code:system_reminder"}, {"sessionId": "goal-wrapup"}],
    )
    text = p["additionalContext"]["content"][0]["text"]
    assert "# Project notes" in text and "cwd changed to" not in text and "durable goal" in text


def test_missing_roots_are_reported_and_bad_lists_refused() -> None:
    s = SessionSources([{"kind": "claude-code", "root": "/nonexistent/p"}, {"kind": "dsh", "root": DSH}])
    assert s.list_sessions()
    report = s.last_report()
    assert "error" in report[0] and "/nonexistent/p" in report[0]["error"]
    assert report[1]["sessions"] > 0
    for bad in ([], [{"kind": "gemini"}], [{"kind": "codex"}, {"kind": "codex"}], [{"root": "/x"}], [3]):
        with pytest.raises(ValueError):
            SessionSources(bad)  # type: ignore[arg-type]
    SessionSources()  # every default location that exists, possibly none


def test_a_root_one_level_off_is_read_as_meant_and_an_empty_one_says_what_it_holds() -> None:
    sessions = FOREIGN / "codex" / "daaain" / "sessions"
    s = SessionSources([{"kind": "codex", "root": sessions}])
    assert len(s.list_sessions()) == 4
    home = FOREIGN / "codex" / "daaain"
    assert s.last_report() == [
        {
            "name": "codex",
            "sessions": 4,
            "note": f"{sessions} is the sessions/ directory of a Codex home: reading {home}",
        }
    ]
    other = SessionSources([{"kind": "codex", "root": DSH}, {"kind": "dsh", "root": DSH}])
    assert other.list_sessions()
    codex, store = other.last_report()
    assert codex["sessions"] == 0
    assert codex["note"].startswith(f"no Codex session in {DSH}: expected a Codex home")
    assert "note" not in store


def test_sessions_that_cannot_be_read_are_named_in_the_report(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "sessions"
    shutil.copytree(DSH, root)
    log = root / "--home-dev-alpha--" / "goal-wrapup" / "session.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:4] + lines[5:]), encoding="utf-8")  # a seq gap
    s = SessionSources([{"kind": "dsh", "root": root}])
    found = Resolver(s).search({"id": "t"}, "goal")
    assert [r["sessionId"] for r in found] == ["goal-wrapup"], "found by its id, not by its text"
    (dsh,) = s.last_report()
    assert dsh["unreadableCount"] == 1
    assert dsh["unreadable"][0]["sessionId"] == "goal-wrapup"
    assert "seq gap" in dsh["unreadable"][0]["why"]
    s.list_sessions()
    assert "unreadable" not in s.last_report()[0], "a new listing starts afresh"


def source_kinds() -> list[str]:
    """Every kind the core reads, as the error of an unknown kind lists them
    (the core derives that list from ``SourceKind::ALL``)."""
    with pytest.raises(ValueError) as raised:
        SessionSources([{"kind": "no-such-kind", "root": "/x"}])
    listed = str(raised.value).split("use one of ", 1)[1]
    return [k.strip() for k in listed.split(",")]


def test_every_source_kind_is_accepted(tmp_path: Path) -> None:
    kinds = source_kinds()
    assert kinds[:3] == ["dsh", "claude-code", "codex"] and len(kinds) == len(set(kinds))
    for kind in kinds:
        root = tmp_path / kind
        root.mkdir()
        s = SessionSources([{"kind": kind, "root": root}])
        assert s.sources == [(kind, root)]
        try:
            s.list_sessions()
        except OSError:
            pass  # a kind whose root is a file (a database) reports the directory
        assert [r["name"] for r in s.last_report()] == [kind]


def test_with_no_default_location_every_place_looked_at_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("DSH_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(var, raising=False)
    s = SessionSources()
    with pytest.raises(OSError) as raised:
        s.list_sessions()
    places = [tmp_path / ".dsh" / "sessions", tmp_path / ".claude" / "projects", tmp_path / ".codex"]
    for place in places:
        assert str(place) in str(raised.value)
    report = s.last_report()
    assert [r["name"] for r in report][:3] == ["dsh", "claude-code", "codex"]
    assert {r["name"] for r in report} <= set(source_kinds())
    assert all("error" in r for r in report)

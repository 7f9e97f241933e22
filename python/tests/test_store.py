"""DshSessionStore on the DSH fixture roots (tests/fixtures/dsh-logs),
checked against the reference's expected.json."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any, Dict, List

import pytest

import dsh_session_reference as dsr
from helpers import FIXTURES, SyncHost

EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
TARGET = EXPECTED["target"]
CONFIGS = {name: {"max_reference_bytes": c.get("maxReferenceBytes")} for name, c in EXPECTED["configs"].items()}
ROOTS = list(EXPECTED["roots"])


def store(root: str) -> dsr.DshSessionStore:
    return dsr.DshSessionStore(FIXTURES / root)


@pytest.mark.parametrize("root", ROOTS)
def test_listing_titles_and_surfaces(root: str) -> None:
    expected = EXPECTED["roots"][root]
    s = store(root)
    assert Path(s.root) == FIXTURES / root and root in repr(s)
    assert s.list_sessions() == expected["listing"]
    for session in expected["sessions"]:
        sid = session["header"]["id"]
        if session.get("titleObservation") == "rejected":
            with pytest.raises(Exception):
                s.read_title(sid)
        else:
            assert s.read_title(sid) == session["title"]
        if "readSurfaceError" in session:
            with pytest.raises(ValueError):
                s.read_surface(sid)
            continue
        snap = json.loads(s.read_surface(sid))
        surface = session["surface"]
        assert snap["session"] == surface["session"]
        assert snap["capturedThroughSeq"] == surface["capturedThroughSeq"]
        assert [e["seq"] for e in snap["events"]] == surface["seqs"]
        assert [e["type"] for e in snap["events"]] == surface["types"]


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("root", ROOTS)
def test_prepare_natively(root: str, config: str) -> None:
    resolver = dsr.Resolver(store(root), **CONFIGS[config])
    content = EXPECTED["prepareInput"]["content"]
    for session in EXPECTED["roots"][root]["sessions"]:
        sid = session["header"]["id"]
        refs = [{"sessionId": sid}]
        want = session["prepare"][config]
        if "error" in want:
            with pytest.raises(dsr.SessionReferenceError) as info:
                resolver.prepare(TARGET, content, refs)
            assert info.value.code == want["error"]
            continue
        got = resolver.prepare(TARGET, content, refs)
        ctx = got["additionalContext"]
        assert ctx["content"][0]["text"] == want["prompt"], sid
        assert ctx["source"] == want["source"], sid
        if config == "default":
            again = asyncio.run(resolver.prepare_async(TARGET, content, refs))
            assert again["additionalContext"]["content"] == ctx["content"]


@pytest.mark.parametrize("root", [r for r in ROOTS if "candidates" in EXPECTED["roots"][r]])
def test_candidates_natively(root: str) -> None:
    for case in EXPECTED["roots"][root]["candidates"]:
        resolver = dsr.Resolver(store(root), candidate_limit=case["candidateLimit"])
        assert resolver.candidates(TARGET, case["query"]) == case["expected"], case["query"]
        assert asyncio.run(resolver.candidates_async(TARGET, case["query"])) == case["expected"]


def test_store_wrapped_by_a_python_host_gives_the_same_prompt() -> None:
    """The store's Python methods satisfy the SessionQuery protocol."""
    native = dsr.Resolver(store("raw"))
    wrapped = dsr.Resolver(store("raw").__class__(FIXTURES / "raw"))

    class Host(SyncHost):
        def __init__(self, inner: dsr.DshSessionStore) -> None:
            super().__init__()
            self.inner = inner

        def list_sessions(self) -> Any:
            return self.inner.list_sessions()

        def read_title(self, session_id: str) -> Any:
            return self.inner.read_title(session_id)

        def read_surface(self, session_id: str) -> Any:
            return self.inner.read_surface(session_id)

    via_python = dsr.Resolver(Host(store("raw")))
    ids: List[str] = [h["id"] for h in store("raw").list_sessions()][:3]
    for sid in ids:
        outs: List[Dict[str, Any]] = [
            r.prepare(TARGET, [], [{"sessionId": sid}])["additionalContext"]["content"]
            for r in (native, wrapped, via_python)
        ]
        assert outs[0] == outs[1] == outs[2]
    assert via_python.candidates(TARGET) == native.candidates(TARGET)


def test_store_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        dsr.DshSessionStore(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        dsr.DshSessionStore(str(tmp_path / "file"))
    empty = dsr.DshSessionStore(tmp_path)
    assert empty.list_sessions() == []
    with pytest.raises(LookupError):
        empty.read_surface("nope")
    with pytest.raises(dsr.ReadFailedError):
        dsr.Resolver(empty).prepare(TARGET, [], [{"sessionId": "nope"}])


GENERATIONS = FIXTURES.parent / "dsh-generations"


def test_every_dsh_generation_reads_with_no_option() -> None:
    """A root after an upgrade to DSH 0.2 (v4 beside v3) and a root of every
    generation v0-v4: each session once, read from its newest generation."""
    s = dsr.DshSessionStore(GENERATIONS / "upgraded-0.2")
    assert [h["id"] for h in s.list_sessions()] == ["tool-call-turn", "team-targets", "gen-v3"]
    assert s.read_title("tool-call-turn") == "Run it under DSH 0.2"
    surface = json.loads(s.read_surface("tool-call-turn"))
    assert surface["session"]["version"] == 4 and surface["capturedThroughSeq"] == 27
    resolver = dsr.Resolver(s)
    labels = [c["label"] for c in resolver.candidates({"id": "t", "cwd": "/home/dev/gen"}, "")]
    assert labels == ["Run it under DSH 0.2", "Use Agent Teams list_agents to", "Rename agentPreset code to ptc"]
    prepared = resolver.prepare({"id": "t"}, [], [{"sessionId": "tool-call-turn"}])
    assert "SNAPSHOT_OK under 0.2." in prepared["additionalContext"]["content"][0]["text"]
    every = dsr.DshSessionStore(GENERATIONS / "zstd")
    assert {h["id"] for h in every.list_sessions()} >= {"gen-v0", "gen-v1", "gen-v2", "gen-v3", "gen-v4-open"}
    assert json.loads(every.read_surface("gen-v4-open"))["capturedThroughSeq"] == 12


def test_a_session_from_a_newer_dsh_is_left_out() -> None:
    s = dsr.DshSessionStore(GENERATIONS / "newer")
    assert [h["id"] for h in s.list_sessions()] == ["tool-call-turn", "gen-v0"]
    with pytest.raises(LookupError, match="newer DSH"):
        s.read_surface("from-a-newer-dsh")


def test_dsh_compat_profiles_and_the_context_window() -> None:
    """The later profiles: capturedFormatVersion after the label, the
    automatic budget from the model's context window, the candidate fields."""
    s = dsr.DshSessionStore(GENERATIONS / "zstd")
    later = dsr.Resolver(s, dsh_compat="0.1.7", reference_context_fraction=0.5)
    got = later.prepare({"id": "t"}, [], [{"sessionId": "gen-v4-open"}], context_window=100000)
    ref = got["additionalContext"]["source"]["references"][0]
    assert list(ref)[:4] == ["sessionId", "label", "capturedFormatVersion", "capturedThroughSeq"]
    assert ref["capturedFormatVersion"] == 4
    again = asyncio.run(later.prepare_async({"id": "t"}, [], [{"sessionId": "gen-v4-open"}], context_window=100000))
    assert again["additionalContext"]["source"] == got["additionalContext"]["source"]
    first = later.candidates({"id": "t", "cwd": "/home/dev/gen"}, "")[0]
    assert list(first) == ["sessionId", "label", "displayTitle", "cwd", "sameWorkspace", "createdAt", "mention"]
    default = dsr.Resolver(s).prepare({"id": "t"}, [], [{"sessionId": "gen-v4-open"}], context_window=100000)
    assert "capturedFormatVersion" not in default["additionalContext"]["source"]["references"][0]
    with pytest.raises(dsr.InvalidConfigError):
        dsr.Resolver(s, dsh_compat="0.1.7", reference_context_fraction=2)
    with pytest.raises(TypeError):
        later.prepare({"id": "t"}, [], [], context_window=-1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_and_its_parent_both_see_changes(tmp_path: Path) -> None:
    """A store watches its root from its second listing on; a forked child
    must not share its parent's event queue (each would drain the other's
    events and answer from a stale listing)."""
    root = tmp_path / "sessions"
    shutil.copytree(FIXTURES / "raw", root)
    s = dsr.DshSessionStore(root)
    before = [h["id"] for h in s.list_sessions()]
    assert [h["id"] for h in s.list_sessions()] == before  # now watching (Linux)
    header = {"type": "session", "version": 0, "id": "made-by-the-child", "createdAt": 1_900_000_000_000,
              "cwd": "/work/forked", "delegationDepth": 0}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            session = root / "--work-forked--" / "made-by-the-child"
            session.mkdir(parents=True)
            (session / "session.jsonl").write_text(json.dumps(header) + "\n", encoding="utf-8")
            ids = [h["id"] for h in s.list_sessions()]
            os._exit(0 if ids == ["made-by-the-child", *before] else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child saw its own change"
    assert [h["id"] for h in s.list_sessions()] == ["made-by-the-child", *before], "so does the parent"

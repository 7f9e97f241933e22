"""The module surface: misuse errors, exceptions, functions, packaging."""

from __future__ import annotations

import inspect
import pickle
import sysconfig
from pathlib import Path
from typing import Any

import pytest

import dsh_session_reference as dsr
from dsh_session_reference import _native
from helpers import SyncHost, snapshot

TARGET = {"id": "t"}


def test_imports_the_installed_wheel() -> None:
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    assert Path(dsr.__file__).resolve().is_relative_to(site)
    assert Path(_native.__file__).resolve().is_relative_to(site)
    assert (Path(dsr.__file__).parent / "py.typed").is_file()
    assert (Path(dsr.__file__).parent / "_native.pyi").is_file()
    assert dsr.__version__.count(".") == 2


def test_everything_public_is_documented() -> None:
    for name in dsr.__all__:
        obj = getattr(dsr, name)
        if name == "__version__":
            continue
        assert inspect.getdoc(obj), name
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member) or isinstance(member, property):
                    assert inspect.getdoc(member), f"{name}.{attr}"


def test_error_classes() -> None:
    codes = {
        dsr.InvalidConfigError: "SESSION_REFERENCE_INVALID_CONFIG",
        dsr.InvalidReferenceError: "SESSION_REFERENCE_INVALID_REFERENCE",
        dsr.SelfReferenceError: "SESSION_REFERENCE_SELF_REFERENCE",
        dsr.TooManyReferencesError: "SESSION_REFERENCE_TOO_MANY",
        dsr.ReadFailedError: "SESSION_REFERENCE_READ_FAILED",
        dsr.BudgetExceededError: "SESSION_REFERENCE_BUDGET_EXCEEDED",
        dsr.OperationCancelledError: "SESSION_REFERENCE_CANCELLED",
        dsr.SessionChangedError: "SESSION_REFERENCE_SESSION_CHANGED",
    }
    import asyncio

    assert dsr.OperationCancelledError is not asyncio.CancelledError
    for cls, code in codes.items():
        assert issubclass(cls, dsr.SessionReferenceError) and issubclass(cls, Exception)
        error = cls("why")
        assert (error.code, error.message, str(error)) == (code, "why", "why")
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is cls and again.code == code and again.message == "why"
    base = dsr.SessionReferenceError("m", "SOME_CODE")
    assert base.code == "SOME_CODE"
    with pytest.raises(TypeError):
        dsr.SessionReferenceError("no code")


def test_codes_from_prepare() -> None:
    host = SyncHost(surfaces={"a": snapshot("a", ["x" * 500])})
    resolver = dsr.Resolver(host, max_references=1, max_reference_bytes=120)
    with pytest.raises(dsr.SelfReferenceError):
        resolver.prepare(TARGET, [], [{"sessionId": "t"}])
    with pytest.raises(dsr.TooManyReferencesError):
        resolver.prepare(TARGET, [], [{"sessionId": "a"}, {"sessionId": "b"}])
    with pytest.raises(dsr.InvalidReferenceError):
        resolver.prepare(TARGET, [], [{"sessionId": "a", "label": None}])
    with pytest.raises(dsr.BudgetExceededError):
        dsr.Resolver(host, max_reference_bytes=16).prepare(TARGET, [], [{"sessionId": "a"}])
    with pytest.raises(dsr.InvalidConfigError):
        dsr.Resolver(host, max_references=4)
    with pytest.raises(dsr.InvalidConfigError):
        dsr.Resolver(host, candidate_limit=True)
    with pytest.raises(dsr.InvalidConfigError):
        dsr.Resolver(host, max_reference_bytes=2**53)
    for bad in [0, -1, 1.5, 2**53, "3", True]:
        with pytest.raises(dsr.InvalidReferenceError):
            resolver.list_candidates(TARGET, "", bad)


def test_config_defaults_and_repr() -> None:
    host = SyncHost()
    resolver = dsr.Resolver(host, max_references=None)
    assert (resolver.max_references, resolver.max_reference_bytes, resolver.candidate_limit) == (3, 65536, 50)
    assert resolver.query is host
    assert repr(resolver) == "Resolver(max_references=3, max_reference_bytes=65536, candidate_limit=50)"
    assert dsr.Resolver(host, max_references=2.0).max_references == 2  # a JSON number, as in JavaScript


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.prepare("t", [], []),
        lambda r: r.prepare({"cwd": "/"}, [], []),
        lambda r: r.prepare({"id": 1}, [], []),
        lambda r: r.prepare({"id": "t", "cwd": 5}, [], []),
        lambda r: r.prepare(TARGET, {1, 2}, []),
        lambda r: r.prepare(TARGET, {1: "x"}, []),
        lambda r: r.prepare(TARGET, [object()], []),
        lambda r: r.prepare(TARGET, [], {"sessionId": "a"}),
        lambda r: r.prepare(TARGET, [], "a"),
        lambda r: r.prepare(TARGET, [], [], cancel="now"),
        lambda r: r.prepare_messages(TARGET, {"id": "m"}),
        lambda r: r.candidates(TARGET, 5),
    ],
)
def test_misuse_raises_type_error(call: Any) -> None:
    resolver = dsr.Resolver(SyncHost())
    with pytest.raises(TypeError):
        call(resolver)


def test_deep_or_cyclic_values_raise_value_error() -> None:
    cyclic: Any = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError):
        dsr.stringify_tag_safe(cyclic)
    with pytest.raises(ValueError):
        dsr.Resolver(SyncHost()).prepare(TARGET, cyclic, [])


def test_query_must_have_the_three_methods() -> None:
    class Partial:
        def list_sessions(self) -> Any:
            return []

        read_title = None

    with pytest.raises(TypeError, match="read_title"):
        dsr.Resolver(Partial())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        dsr.Resolver(object())  # type: ignore[arg-type]


def test_functions() -> None:
    uri = dsr.encode_uri('a "quoted"\n id')
    assert dsr.decode_uri(uri) == 'a "quoted"\n id'
    assert dsr.format_mention("x", "a]b\\c") == "@[a\\]b\\\\c](dsh-session:Ingi)"
    assert dsr.parse_text("hi dsh-session:Ingi!") == {
        "text": "hi @x!",
        "references": [{"sessionId": "x", "label": "x"}],
    }
    assert dsr.stringify_tag_safe({"b": [1, 2.5, None, True, "</x>"], "a": float("inf")}) == (
        '{"b":[1,2.5,null,true,"\\u003c/x>"],"a":null}'
    )
    assert dsr.stringify_tag_safe(2**70) == "1.1805916207174113e+21"
    assert dsr.stringify_tag_safe(("t", -0.0)) == '["t",0]'
    assert dsr.stringify_tag_safe_json(b'{"a":1,"a":2}') == '{"a":2}'
    for bad in ["{", "", b"\xff"]:
        with pytest.raises(ValueError):
            dsr.stringify_tag_safe_json(bad)
    with pytest.raises(TypeError):
        dsr.stringify_tag_safe_json(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        dsr.encode_uri(5)  # type: ignore[arg-type]
    with pytest.raises(dsr.InvalidReferenceError):
        dsr.decode_uri("dsh-session:")
    with pytest.raises(UnicodeEncodeError):
        dsr.encode_uri("\ud800")


def test_content_is_copied_not_aliased() -> None:
    host = SyncHost(surfaces={"a": snapshot("a", ["x"])})
    content = [{"type": "text", "text": "go", "extra": {"n": [1, 2]}}]
    out = dsr.Resolver(host).prepare(TARGET, content, [{"sessionId": "a"}])
    assert out["content"] == content
    out["content"][0]["extra"]["n"].append(3)
    assert content[0]["extra"]["n"] == [1, 2]


def test_conversation_snapshot_from_host_messages() -> None:
    """A host's own OpenAI- or Anthropic-style history, referenced through
    a pre-projected snapshot: only user and assistant text reaches the prompt."""
    openai = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "Use <tabs>?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "SECRET TOOL OUTPUT"},
        {"role": "assistant", "content": [{"type": "text", "text": "Spaces."}]},
    ]
    anthropic = [
        {"role": "user", "content": "Use <tabs>?"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "SECRET THOUGHT"},
                                          {"type": "text", "text": "Spaces."}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "SECRET TOOL OUTPUT"}]},
    ]
    for fmt, messages in [("openai", openai), ("anthropic", anthropic)]:
        snap = dsr.conversation_snapshot("other", messages, format=fmt, cwd="/w")
        assert snap == {
            "session": {"id": "other", "cwd": "/w"},
            "capturedThroughSeq": len(messages) - 1,
            "conversation": [{"role": "user", "text": "Use <tabs>?"}, {"role": "assistant", "text": "Spaces."}],
        }

        class Host:
            def list_sessions(self) -> Any:
                return [{"id": "other", "createdAt": 1}]

            def read_title(self, session_id: str) -> Any:
                return None

            def read_surface(self, session_id: str) -> Any:
                return snap

        prepared = dsr.Resolver(Host()).prepare({"id": "me"}, "see", [{"sessionId": "other"}])
        prompt = prepared["additionalContext"]["content"][0]["text"]
        assert '{"role":"user","text":"Use \\u003ctabs>?"},{"role":"assistant","text":"Spaces."}' in prompt
        assert "SECRET" not in prompt
    assert dsr.conversation_snapshot("s", [], captured_through_seq=9)["capturedThroughSeq"] == 9
    assert dsr.conversation_snapshot("s", [])["capturedThroughSeq"] is None
    with pytest.raises(ValueError, match="unknown message format"):
        dsr.conversation_snapshot("s", [], format="gemini")
    with pytest.raises(ValueError, match="message 0"):
        dsr.conversation_snapshot("s", [{"role": "user", "content": 5}])

"""Every vector of the conformance set, through the Python API."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any, Dict, List

import pytest

import dsh_session_reference as dsr
from helpers import make_host, vectors

CONFIG_KEYS = {
    "maxReferences": "max_references",
    "maxReferenceBytes": "max_reference_bytes",
    "candidateLimit": "candidate_limit",
}


def kwargs_of(config: Dict[str, Any]) -> Dict[str, Any]:
    """The resolver keyword arguments of a wire config (unknown keys are
    ignored, as the contract says)."""
    return {CONFIG_KEYS[k]: v for k, v in config.items() if k in CONFIG_KEYS}


def ids(cases: List[Dict[str, Any]], key: str = "name") -> List[str]:
    return [f"{i}-{case.get(key, '')}"[:80] for i, case in enumerate(cases)]


URI = vectors("uri.json")


@pytest.mark.parametrize("case", URI["valid"], ids=ids(URI["valid"], "uri"))
def test_uri_valid(case: Dict[str, str]) -> None:
    assert dsr.encode_uri(case["sessionId"]) == case["uri"]
    assert dsr.decode_uri(case["uri"]) == case["sessionId"]


@pytest.mark.parametrize("case", URI["invalid"], ids=ids(URI["invalid"], "note"))
def test_uri_invalid(case: Dict[str, str]) -> None:
    with pytest.raises(dsr.InvalidReferenceError) as info:
        dsr.decode_uri(case["uri"])
    assert info.value.code == case["error"]


MENTIONS = vectors("mention.json")


@pytest.mark.parametrize("case", MENTIONS, ids=ids(MENTIONS, "sessionId"))
def test_mention(case: Dict[str, str]) -> None:
    if "label" in case:
        assert dsr.format_mention(case["sessionId"], case["label"]) == case["mention"]
    else:
        assert dsr.format_mention(case["sessionId"]) == case["mention"]
        assert dsr.format_mention(case["sessionId"], None) == case["mention"]


PARSE = vectors("parse.json")


@pytest.mark.parametrize("case", PARSE, ids=ids(PARSE, "text"))
def test_parse(case: Dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(dsr.SessionReferenceError) as info:
            dsr.parse_text(case["text"])
        assert info.value.code == case["error"]
        return
    assert dsr.parse_text(case["text"]) == case["expected"]


TAG_SAFE = vectors("tag_safe.json")


@pytest.mark.parametrize("case", TAG_SAFE, ids=ids(TAG_SAFE, "note"))
def test_tag_safe(case: Dict[str, Any]) -> None:
    want = case["serialized"]
    assert "<" not in want
    assert dsr.stringify_tag_safe(case["value"]) == want
    if "value_json" in case:
        assert dsr.stringify_tag_safe_json(case["value_json"]) == want
        assert dsr.stringify_tag_safe_json(case["value_json"].encode("utf-8")) == want
    else:
        # JSON text of the value reads back to the same output.
        assert dsr.stringify_tag_safe_json(json.dumps(case["value"])) == want
    assert json.loads(want) == json.loads(json.dumps(case["value"]))


CONFIG = vectors("config.json")


@pytest.mark.parametrize("case", CONFIG, ids=ids(CONFIG, "config"))
def test_config(case: Dict[str, Any]) -> None:
    host = make_host("dict")
    if case.get("ok"):
        resolver = dsr.Resolver(host, **kwargs_of(case["config"]))
        for wire, attr in CONFIG_KEYS.items():
            if isinstance(case["config"].get(wire), int):
                assert getattr(resolver, attr) == case["config"][wire]
        return
    with pytest.raises(dsr.InvalidConfigError) as info:
        dsr.Resolver(host, **kwargs_of(case["config"]))
    assert info.value.code == case["error"]


PREPARE = vectors("prepare.json")


def run_prepare(case: Dict[str, Any], style: str) -> Any:
    host = make_host(style, surfaces=case["surfaces"])
    resolver = dsr.Resolver(host, **kwargs_of(case["config"]))
    target = {"id": case["targetId"]}
    content = [{"type": "text", "text": "go"}]
    if style == "async":
        return content, asyncio.run(resolver.prepare_async(target, content, case["references"]))
    return content, resolver.prepare(target, content, case["references"])


def check_prepare(case: Dict[str, Any], style: str) -> None:
    expected = case["expected"]
    if "error" in expected and expected["error"] == "SESSION_REFERENCE_INVALID_CONFIG":
        with pytest.raises(dsr.InvalidConfigError):
            run_prepare(case, style)
        return
    if "error" in expected:
        with pytest.raises(dsr.SessionReferenceError) as info:
            run_prepare(case, style)
        assert info.value.code == expected["error"], info.value
        return
    content, result = run_prepare(case, style)
    assert result["content"] == content and result["content"] is not content
    if expected.get("expected_none"):
        assert result == {"content": content}
        return
    context = result["additionalContext"]
    assert list(context) == ["source", "content", "role", "id"]
    assert context["role"] == "user"
    uuid.UUID(context["id"])
    assert context["content"] == [{"type": "text", "text": expected["prompt"]}]
    assert context["source"] == expected["source"]


@pytest.mark.parametrize("case", PREPARE, ids=ids(PREPARE))
def test_prepare(case: Dict[str, Any]) -> None:
    check_prepare(case, "dict")


@pytest.mark.parametrize("style", ["bytes", "str", "async"])
@pytest.mark.parametrize("case", PREPARE, ids=ids(PREPARE))
def test_prepare_other_hosts(case: Dict[str, Any], style: str) -> None:
    """The same vectors with snapshots as JSON bytes / str and an async host."""
    check_prepare(case, style)


CANDIDATES = vectors("candidates.json")


def run_candidates(case: Dict[str, Any], style: str, face: str = "list") -> Any:
    host = make_host(style, sessions=case["sessions"], titles=case["titles"])
    resolver = dsr.Resolver(host, **kwargs_of(case["config"]))
    target, query = case["target"], case["query"]
    if "limit" in case and face == "mentions":
        # candidates() with the same explicit limit gives the mentions itself.
        if style == "async":
            return asyncio.run(resolver.candidates_async(target, query, case["limit"]))
        return resolver.candidates(target, query, case["limit"])
    if "limit" in case:
        if style == "async":
            found = asyncio.run(resolver.list_candidates_async(target, query, case["limit"]))
        else:
            found = resolver.list_candidates(target, query, case["limit"])
        for item in found:
            assert "mention" not in item
            item["mention"] = dsr.format_mention(item["sessionId"], item["label"])
        return found
    if style == "async":
        return asyncio.run(resolver.candidates_async(target, query))
    return resolver.candidates(target, query)


@pytest.mark.parametrize("style", ["dict", "bytes", "async"])
@pytest.mark.parametrize("case", CANDIDATES, ids=ids(CANDIDATES))
def test_candidates(case: Dict[str, Any], style: str) -> None:
    expected = case["expected"]
    for face in ["list", "mentions"]:
        if isinstance(expected, dict):
            with pytest.raises(dsr.SessionReferenceError) as info:
                run_candidates(case, style, face)
            assert info.value.code == expected["error"]
        else:
            assert run_candidates(case, style, face) == expected

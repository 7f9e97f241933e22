"""The hardened mode through the Python API, on the red-team DSH root
(tests/red-team/): the keyword arguments reach the core, and with
``hardened=True`` no hidden character and no credential reaches the prompt."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List

import pytest

import dsh_session_reference as dsr
from helpers import REPO

RED_TEAM = REPO / "tests" / "red-team"
RED_TEAM_CASES = json.loads((RED_TEAM / "sessions.json").read_text(encoding="utf-8"))
STORE = dsr.DshSessionStore(RED_TEAM / "root")
TARGET: dsr.Target = {"id": "new-chat", "cwd": "/home/dev/red"}
# Tag characters, bidirectional controls, zero-width characters.
HIDDEN = re.compile("[\U000e0000-\U000e007f\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")


def prepare_all(**config: Any) -> List[Dict[str, Any]]:
    resolver = dsr.Resolver(STORE, **config)
    out = []
    for s in RED_TEAM_CASES["sessions"]:
        text = f"Compare {dsr.format_mention(s['id'], s['title'])} please."
        message = {"role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": text}]}
        rewritten, context = resolver.prepare_messages(TARGET, [message])
        out.append(
            {
                "session": s,
                "text": rewritten["content"][0]["text"],
                "prompt": context["content"][0]["text"],
                "meta": context["source"]["references"][0],
            }
        )
    return out


def test_the_preset_and_an_explicit_false() -> None:
    assert dsr.REDACTED_SECRETS_KEY == "redactedSecrets"
    r = dsr.Resolver(STORE, hardened=True)
    assert (r.redact_secrets, r.escape_invisible, r.sanitize_labels) == (True, True, True)
    r = dsr.Resolver(STORE, hardened=True, escape_invisible=False)
    assert (r.redact_secrets, r.escape_invisible, r.sanitize_labels) == (True, False, True)
    r = dsr.Resolver(STORE, sanitize_labels=True)
    assert (r.redact_secrets, r.escape_invisible, r.sanitize_labels) == (False, False, True)


def test_hardened_output_hides_nothing_and_leaks_no_credential() -> None:
    secrets = [s["value"] for s in RED_TEAM_CASES["secrets"]]
    for got in prepare_all(hardened=True):
        s, prompt, text, meta = got["session"], got["prompt"], got["text"], got["meta"]
        assert not HIDDEN.search(prompt), s["id"]
        assert not HIDDEN.search(text) and "\n" not in text, s["id"]
        for secret in secrets:
            assert secret not in prompt and secret not in text, (s["id"], secret)
        assert meta[dsr.REDACTED_SECRETS_KEY] == sum(s["secretsByKind"].values()), s["id"]
        assert len(meta["label"]) <= 100 and meta["sessionId"] == s["id"]


def test_without_options_the_output_is_plain() -> None:
    plain = prepare_all()
    off = prepare_all(hardened=False, redact_secrets=False, escape_invisible=False, sanitize_labels=False)
    assert off == plain
    assert any(HIDDEN.search(p["prompt"]) for p in plain)
    assert all(dsr.REDACTED_SECRETS_KEY not in p["meta"] for p in plain)


@pytest.mark.parametrize("key", ["hardened", "redact_secrets", "escape_invisible", "sanitize_labels"])
@pytest.mark.parametrize("bad", [1, 0, "true", [], {}])
def test_non_bool_options_are_invalid_config(key: str, bad: Any) -> None:
    with pytest.raises(dsr.InvalidConfigError):
        dsr.Resolver(STORE, **{key: bad})


def test_max_references_still_rejects_a_bool() -> None:
    with pytest.raises(dsr.InvalidConfigError):
        dsr.Resolver(STORE, max_references=True)

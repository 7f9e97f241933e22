"""Hostile hosts (the guarantees of SECURITY.md) through the Python front: non-JSON text, a 100 MB
snapshot, 10,000 levels of nesting, a snapshot of another session, hung
title reads, 100,000 sessions, host code that exhausts Python's recursion
limit on the library's threads, and one resolver shared by 8 threads doing
1,000 mixed calls with random cancellations.

(Raising hosts, wrong return types, hung surface and listing reads and their
cancellation are in ``test_hosts.py``.)
"""

from __future__ import annotations

import asyncio
import faulthandler
import json
import queue
import random
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import dsh_session_reference as dsr
from helpers import AsyncHost, SyncHost, snapshot, wait_until

TARGET = {"id": "target", "cwd": "/work"}
CONTENT = [{"type": "text", "text": "go"}]
HEADER_END = "<referenced-sessions>\n"
FOOTER = "\n</referenced-sessions>"


def sources_of(prepared: Dict[str, Any]) -> List[Any]:
    """The source objects between the prompt's tags, parsed."""
    prompt = prepared["additionalContext"]["content"][0]["text"]
    assert prompt.count(HEADER_END) == 1 and prompt.endswith(FOOTER)
    sources: List[Any] = json.loads(prompt[prompt.index(HEADER_END) + len(HEADER_END):-len(FOOTER)])
    return sources


def host_returning(value: Any, is_async: bool = False) -> Any:
    """A host whose ``read_surface`` returns ``value`` for every id (other
    methods as in ``helpers``; ``good`` reads a valid snapshot)."""

    class Host(SyncHost):
        def read_surface(self, session_id: str) -> Any:
            return snapshot("good", ["fine"]) if session_id == "good" else value

    class Async(AsyncHost):
        async def read_surface(self, session_id: str) -> Any:
            return snapshot("good", ["fine"]) if session_id == "good" else value

    return Async() if is_async else Host()


def peak_rss_reset() -> bool:
    """Resets the kernel's peak-RSS mark of this process (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int:
    """``VmHWM``: the peak resident set since the last reset, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/self/status")


def release_native_refs() -> None:
    """References dropped on the library's threads without the GIL are
    released the next time native code takes it."""
    dsr.encode_uri("x")


# --- text that is not a snapshot ---------------------------------------------

# Beyond test_hosts.py's `{not json` and `[]`: empty, invalid UTF-8, NUL
# bytes, a truncated document, a raw control character, a lone surrogate.
GOOD_TEXT = json.dumps(snapshot("s", ["abc", "def"]))


@pytest.mark.parametrize(
    "returned, words",
    [
        (b"", "malformed"),
        ("", "malformed"),
        (b"\xff\xfe{}", "malformed"),
        (b'{"session":{"id":"\xff"},"capturedThroughSeq":0,"events":[]}', "malformed"),
        (b"\x00" * 16, "malformed"),
        (GOOD_TEXT[: len(GOOD_TEXT) // 2].encode(), "malformed"),
        (GOOD_TEXT[: len(GOOD_TEXT) // 2], "malformed"),
        ('{"session":{"id":"a\x01"},"capturedThroughSeq":1,"events":[]}', "malformed"),
        ('{"session":{"id":"\ud800"},"capturedThroughSeq":1,"events":[]}', "UnicodeEncodeError"),
        ("\ud800", "UnicodeEncodeError"),
    ],
)
def test_text_that_is_not_a_snapshot_fails_the_whole_call(returned: Any, words: str) -> None:
    resolver = dsr.Resolver(host_returning(returned))
    with pytest.raises(dsr.ReadFailedError) as info:
        resolver.prepare(TARGET, CONTENT, [{"sessionId": "good"}, {"sessionId": "bad"}])
    assert info.value.code == "SESSION_REFERENCE_READ_FAILED"
    assert words in str(info.value) and 'session "bad"' in str(info.value)
    assert "additionalContext" in resolver.prepare(TARGET, CONTENT, [{"sessionId": "good"}])


# --- 100 MB ------------------------------------------------------------------

def test_a_100_mb_snapshot_as_bytes_is_read_in_place_and_kept_within_budget() -> None:
    """~100 MB of 500-byte messages with characters that need escaping: the
    context is within budget with exact statistics, and the bytes are read
    where they are (a copy of the text would add 100 MB to the peak)."""
    count = 190_000
    filler = ('lorem <ipsum> "dolor" \\ sit amet, ' * 15)[:490]
    escaped = json.dumps(filler)[1:-1].encode()
    texts_bytes = 0
    parts = []
    for i in range(count):
        text = f"{i} ".encode() + escaped
        texts_bytes += len(f"{i} ") + len(filler.encode())
        if i % 2:
            parts.append(b'{"seq":%d,"type":"assistant/message","data":{"message":{"role":"assistant",'
                         b'"content":[{"type":"text","text":"%s"}]}}}' % (i, text))
        else:
            parts.append(b'{"seq":%d,"type":"user/message","data":{"role":"user","source":{"kind":"user"},'
                         b'"content":[{"type":"text","text":"%s"}]}}' % (i, text))
    big = (b'{"session":{"id":"big","createdAt":1,"cwd":"/big"},"capturedThroughSeq":%d,"events":['
           % (count - 1)) + b",".join(parts) + b"]}"
    del parts
    assert len(big) >= 100_000_000

    class Host(SyncHost):
        def read_surface(self, session_id: str) -> Any:
            return big

    resolver = dsr.Resolver(Host())
    refs_before = sys.getrefcount(big)
    can_measure = peak_rss_reset()
    rss_before = peak_rss()
    started = time.monotonic()
    out = resolver.prepare(TARGET, CONTENT, [{"sessionId": "big", "label": "Big"}])
    elapsed = time.monotonic() - started
    growth = peak_rss() - rss_before

    [src] = sources_of(out)
    assert len(dsr.stringify_tag_safe(src).encode()) <= resolver.max_reference_bytes
    assert (src["sessionId"], src["label"], src["cwd"]) == ("big", "Big", "/big")
    conversation = src["conversation"]
    kept = len(conversation)
    assert 0 < kept < count
    assert conversation[-1] == {"role": "assistant", "text": f"{count - 1} {filler}"}
    assert conversation[0]["text"] == f"{count - kept} {filler}"  # the newest run survives, untruncated
    meta = out["additionalContext"]["source"]["references"][0]
    kept_bytes = sum(len(m["text"].encode()) for m in conversation)
    assert meta == {
        "sessionId": "big", "label": "Big", "capturedThroughSeq": count - 1, "compacted": False,
        "originalMessages": count, "retainedMessages": kept, "omittedMessages": count - kept,
        "omittedBytes": texts_bytes - kept_bytes, "truncated": True, "inputIndex": 0,
    }
    # Generous (debug builds on a loaded 2-core machine): catches quadratic
    # work, which would take hours.
    assert elapsed < 120, f"{elapsed:.1f}s"
    if can_measure:
        assert growth < len(big) // 4, f"peak RSS grew by {growth / 1e6:.0f} MB for {len(big) / 1e6:.0f} MB of input"
    # The library let go of the buffer.
    assert wait_until(lambda: (release_native_refs(), sys.getrefcount(big) == refs_before)[1])


# --- 10,000 levels of nesting --------------------------------------------------

DEPTH = 10_000


def nested_list(depth: int, leaf: Any = "leaf") -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def nested_dict(depth: int) -> Any:
    value: Any = {"leaf": 1}
    for _ in range(depth):
        value = {"k": value}
    return value


def user_event(data_extra: Dict[str, Any], text: Any = "kept", seq: int = 1) -> Dict[str, Any]:
    return {"seq": seq, "type": "user/message",
            "data": {"role": "user", "source": {"kind": "user"},
                     "content": [{"type": "text", "text": text}], **data_extra}}


def snapshot_with(events: List[Any], session: Any = None) -> Dict[str, Any]:
    return {"session": session if session is not None else {"id": "s", "createdAt": 1},
            "capturedThroughSeq": 1, "events": events}


def deep_value_cases() -> List[Tuple[str, Any]]:
    kept = user_event({})
    return [
        ("whole", nested_dict(DEPTH)),
        ("session", snapshot_with([kept], session={"id": "s", "createdAt": 1, "extra": nested_list(DEPTH)})),
        ("text", snapshot_with([user_event({}, text=nested_list(DEPTH), seq=0), kept])),
        ("skipped-block", snapshot_with([{"seq": 0, "type": "user/message", "data": {
            "role": "user", "source": {"kind": "user"},
            "content": [{"type": "tool-call", "arguments": nested_dict(DEPTH)}]}}, kept])),
        ("skipped-event", snapshot_with([{"seq": 0, "type": "tool/result", "data": nested_list(DEPTH)}, kept])),
    ]


@pytest.mark.parametrize("is_async", [False, True])
def test_ten_thousand_levels_as_python_data_are_a_clean_read_failure(is_async: bool) -> None:
    """Python data is converted up to 512 levels (which also stops cycles):
    deeper is a read failure wherever it is, never a crash — the conversion
    runs on the library's worker threads, whose stacks are 2 MiB."""
    for where, value in deep_value_cases():
        resolver = dsr.Resolver(host_returning(value, is_async))
        with pytest.raises(dsr.ReadFailedError, match="nested more than 512 levels") as info:
            resolver.prepare(TARGET, CONTENT, [{"sessionId": "good"}, {"sessionId": where}])
        assert info.value.code == "SESSION_REFERENCE_READ_FAILED", where

    class Listing(SyncHost):
        def list_sessions(self) -> Any:
            return [{"id": "a", "createdAt": 1, "cwd": None, "extra": nested_list(DEPTH)}]

    with pytest.raises(dsr.ReadFailedError, match="nested more than 512 levels"):
        dsr.Resolver(Listing()).candidates(TARGET)


def deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("form", ["bytes", "str"])
def test_ten_thousand_levels_as_json_text(form: str) -> None:
    """JSON text goes to the core's parser: misplaced nesting is a malformed
    snapshot, nesting in data that projection skips is skipped, a `text` that
    is not a string drops its block — and nothing overflows a stack."""
    deep = deep_text(DEPTH)
    kept = '{"type":"user/message","data":{"content":[{"type":"text","text":"kept"}],"source":{"kind":"user"}}}'

    def doc(session: str = '{"id":"s"}', events: str = "[" + kept + "]") -> str:
        return '{"session":%s,"capturedThroughSeq":1,"events":%s}' % (session, events)

    cases = {
        "whole": (deep, None),
        "session": (doc(session=deep), None),
        "cwd": (doc(session='{"id":"s","cwd":%s}' % deep), None),
        "events": (doc(events=deep), None),
        "text": (doc(events='[{"type":"user/message","data":{"content":[{"type":"text","text":%s}],'
                            '"source":{"kind":"user"}}},%s]' % (deep, kept)), [{"role": "user", "text": "kept"}]),
        "skipped-event": (doc(events='[{"type":"tool/result","data":%s},%s]' % (deep, kept)),
                          [{"role": "user", "text": "kept"}]),
        "skipped-block": (doc(events='[{"type":"user/message","data":{"content":[{"type":"tool-call",'
                                     '"arguments":%s},{"type":"text","text":"kept"}],"source":{"kind":"user"}}}]'
                                     % deep), [{"role": "user", "text": "kept"}]),
        "extra-key": (doc(events='[{"type":"user/message","extra":%s,"data":{"content":[{"type":"text",'
                                 '"text":"kept"}],"source":{"kind":"user"},"more":%s}}]' % (deep, deep)),
                      [{"role": "user", "text": "kept"}]),
    }
    for where, (text, conversation) in cases.items():
        returned = text.encode() if form == "bytes" else text
        resolver = dsr.Resolver(host_returning(returned))
        if conversation is None:
            with pytest.raises(dsr.ReadFailedError, match="malformed surface snapshot"):
                resolver.prepare(TARGET, CONTENT, [{"sessionId": where}])
        else:
            [src] = sources_of(resolver.prepare(TARGET, CONTENT, [{"sessionId": where}]))
            assert src["conversation"] == conversation, where

    class Listing(SyncHost):
        def list_sessions(self) -> Any:
            text = '[{"id":"a","createdAt":1,"x":%s}]' % deep
            return text.encode() if form == "bytes" else text

    with pytest.raises(dsr.ReadFailedError):
        dsr.Resolver(Listing()).candidates(TARGET)


def test_data_nested_up_to_the_limit_round_trips_on_every_thread() -> None:
    """500 levels (under the limit) in content, messages and a snapshot go in
    and come back out — the output conversion of an async call runs on a
    worker thread — and a caller on a thread with a small stack can pass them."""
    deep = nested_list(500)
    messages = [{"id": "m", "role": "user", "source": {"kind": "user"},
                 "content": [{"type": "text", "text": "see " + dsr.format_mention("s")},
                             {"type": "custom", "payload": deep}]}]
    surface = snapshot_with([{"seq": 0, "type": "tool/result", "data": deep}, user_event({"x": deep})])
    resolver = dsr.Resolver(host_returning(surface))
    want = [{"id": "m", "role": "user", "source": {"kind": "user"},
             "content": [{"type": "text", "text": "see @s"}, {"type": "custom", "payload": deep}]}]

    out = resolver.prepare_messages(TARGET, messages)
    assert out[:1] == want and sources_of({"additionalContext": out[1]})[0]["conversation"][0]["text"] == "kept"
    out = asyncio.run(resolver.prepare_messages_async(TARGET, messages))
    assert out[:1] == want
    prepared = asyncio.run(resolver.prepare_async(TARGET, deep, [{"sessionId": "s"}]))
    assert prepared["content"] == deep

    results: List[Any] = []
    threading.stack_size(256 * 1024)
    try:
        small = threading.Thread(target=lambda: results.append(resolver.prepare(TARGET, deep, [])))
    finally:
        threading.stack_size(0)
    small.start()
    small.join()
    assert results == [{"content": deep}]


def test_host_code_exhausting_python_recursion_on_a_worker_thread() -> None:
    """Host methods run on the library's threads; a host that recurses
    without end gets Python's RecursionError there, which becomes the cause
    of a read failure, not a crash."""

    class Host(SyncHost):
        def read_surface(self, session_id: str) -> Any:
            if session_id == "json":
                return json.loads(deep_text(100_000))

            def down(n: int) -> int:
                return down(n + 1) + 1

            return down(0)

    for which in ["json", "python"]:
        with pytest.raises(dsr.ReadFailedError) as info:
            dsr.Resolver(Host()).prepare(TARGET, CONTENT, [{"sessionId": which}])
        assert isinstance(info.value.__cause__, RecursionError), which


def test_a_host_that_calls_the_resolver_from_inside_a_read() -> None:
    """Re-entrancy: a host method (on one of the library's threads) makes
    blocking and asyncio calls of a resolver itself; both complete."""
    inner = dsr.Resolver(host_returning(snapshot("inner", ["deep inside"])))

    class Host(SyncHost):
        def read_surface(self, session_id: str) -> Any:
            nested = inner.prepare(TARGET, CONTENT, [{"sessionId": "i"}])
            again = asyncio.run(inner.candidates_async(TARGET))
            assert again == []
            return snapshot(session_id, [sources_of(nested)[0]["conversation"][0]["text"]])

    [src] = sources_of(dsr.Resolver(Host()).prepare(TARGET, CONTENT, [{"sessionId": "outer"}]))
    assert src["conversation"] == [{"role": "user", "text": "deep inside"}]


# --- another session's snapshot ------------------------------------------------

@pytest.mark.parametrize("form", ["dict", "bytes"])
def test_a_snapshot_of_another_session_shows_its_own_id(form: str) -> None:
    """The host answers "asked" with the snapshot of "answered": the prompt
    carries the snapshot's id and cwd (as the reference does), the metadata
    the id that was asked for."""
    value = snapshot("answered", ["hello"], cwd="/elsewhere")
    resolver = dsr.Resolver(host_returning(json.dumps(value).encode() if form == "bytes" else value))
    out = resolver.prepare(TARGET, CONTENT, [{"sessionId": "asked", "label": "L"}])
    [src] = sources_of(out)
    assert (src["sessionId"], src["label"], src["cwd"]) == ("answered", "L", "/elsewhere")
    assert out["additionalContext"]["source"]["references"][0]["sessionId"] == "asked"


# --- hung titles -----------------------------------------------------------------

def test_hung_title_reads_are_cancelled() -> None:
    """Listing answers, every title read hangs: a search only ends by
    cancellation, promptly, and the abandoned host threads finish once the
    host lets them go."""
    release = threading.Event()
    entered = threading.Event()

    class Host(SyncHost):
        def read_title(self, session_id: str) -> Optional[str]:
            entered.set()
            release.wait()
            return "late"

    host = Host(sessions=[{"id": f"s{i}", "createdAt": i} for i in range(20)])
    token = dsr.CancelToken()
    threading.Thread(target=lambda: (entered.wait(), time.sleep(0.05), token.cancel())).start()
    started = time.monotonic()
    with pytest.raises(dsr.OperationCancelledError):
        dsr.Resolver(host).candidates(TARGET, "s1", cancel=token)
    assert time.monotonic() - started < 10
    release.set()


# --- 100,000 sessions ------------------------------------------------------------

SESSIONS = 100_000


def cwd_of(i: int) -> Optional[str]:
    return {0: "/work", 1: None, 2: None}.get(i % 5, f"/p{i % 11}")


def title_of(i: int) -> Optional[str]:
    if i % 7 == 0:
        raise RuntimeError("title store down")
    return None if i % 7 in (1, 2) else f"Topic {i % 1000} ÄÖ"


class ManySessions(SyncHost):
    def __init__(self, form: str) -> None:
        super().__init__()
        listing: List[Dict[str, Any]] = []
        for i in range(SESSIONS):
            header: Dict[str, Any] = {"id": f"s{i}", "createdAt": i}
            if cwd_of(i) is not None:
                header["cwd"] = cwd_of(i)
            listing.append(header)
        listing.insert(SESSIONS // 2, {"id": TARGET["id"], "createdAt": 0, "cwd": "/work"})
        self.listing: Any = json.dumps(listing).encode() if form == "bytes" else listing
        self.titles_read = 0

    def list_sessions(self) -> Any:
        return self.listing

    def read_title(self, session_id: str) -> Optional[str]:
        self.titles_read += 1
        return title_of(int(session_id[1:]))


def expected_candidates(query: str, limit: int) -> List[Dict[str, Any]]:
    rank = {"/work": 0, None: 1}
    found = []
    for i in range(SESSIONS):
        try:
            label = title_of(i) or f"s{i}"
        except RuntimeError:
            label = f"s{i}"
        cwd = cwd_of(i)
        needle = query.lower()
        if needle and not any(needle in h.lower() for h in [f"s{i}", cwd or "", label]):
            continue
        item: Dict[str, Any] = {"sessionId": f"s{i}", "label": label}
        if cwd is not None:
            item["cwd"] = cwd
        item["createdAt"] = i
        found.append((rank.get(cwd, 2), i, item))
    found.sort(key=lambda x: (x[0], x[1]))
    return [item for _, _, item in found[:limit]]


@pytest.mark.parametrize("form", ["list", "bytes"])
def test_listing_100_000_sessions(form: str) -> None:
    host = ManySessions(form)
    resolver = dsr.Resolver(host)
    started = time.monotonic()
    got = resolver.candidates(TARGET)
    elapsed = time.monotonic() - started
    want = expected_candidates("", 50)
    assert got == [{**c, "mention": dsr.format_mention(c["sessionId"], c["label"])} for c in want]
    assert host.titles_read == 50  # empty query: only the kept candidates' titles
    assert elapsed < 30, f"{elapsed:.1f}s"


def test_searching_100_000_sessions_reads_every_title() -> None:
    host = ManySessions("list")
    started = time.monotonic()
    got = dsr.Resolver(host).list_candidates(TARGET, "TOPIC 99 äö", 100)
    elapsed = time.monotonic() - started
    assert got == expected_candidates("topic 99 äö", 100) and len(got) == 56
    assert host.titles_read == SESSIONS
    assert elapsed < 60, f"{elapsed:.1f}s"


# --- one resolver, 8 threads, 1,000 calls, random cancellations ------------------

class SharedHost(SyncHost):
    """Thread-safe and slightly slow: surfaces in every form, an ``async``
    title read, one failing surface and one failing title."""

    def __init__(self) -> None:
        texts = {sid: [f"{sid} says <{n}> " + "x" * (n * 37 % 300) for n in range(40)] for sid in "abcdef"}
        self.forms: Dict[str, Any] = {}
        for n, (sid, t) in enumerate(sorted(texts.items())):
            value = snapshot(sid, t, cwd="/work" if n % 2 else None)
            self.forms[sid] = [value, json.dumps(value).encode(), json.dumps(value)][n % 3]
        sessions = [{"id": sid, "createdAt": n, **({"cwd": "/work"} if n % 2 else {})}
                    for n, sid in enumerate(sorted(texts))] + [{"id": "target", "createdAt": 99}]
        super().__init__(sessions=sessions)

    def read_surface(self, session_id: str) -> Any:
        time.sleep(random.random() / 1000)
        if session_id == "f":
            raise KeyError(session_id)
        return self.forms[session_id]

    async def read_title(self, session_id: str) -> Optional[str]:  # type: ignore[override]
        await asyncio.sleep(random.random() / 1000)
        if session_id == "e":
            raise RuntimeError("no title")
        return None if session_id == "c" else f"Title {session_id.upper()}"


Call = Callable[[dsr.Resolver, Optional[dsr.CancelToken]], Any]


def call_pool() -> List[Tuple[str, Call]]:
    """Every distinct call of the run, with a name."""
    pool: List[Tuple[str, Call]] = []
    ids = "abcde"
    for n, refs in enumerate([["a"], ["b", "c"], ["d", "e", "a"], ["a", "a", "b"], ["c", "f"], ["target"], [],
                              ["a", "b", "c", "d"], ["e"]]):
        references = [{"sessionId": r, **({"label": f"L{r}"} if n % 2 else {})} for r in refs]
        pool.append((f"prepare{refs}",
                     lambda r, c, refs=references: r.prepare(TARGET, CONTENT, refs, cancel=c)))
    for n in range(4):
        messages = [
            {"id": "m0", "role": "user", "source": {"kind": "user"},
             "content": [{"type": "text", "text": "see " + dsr.format_mention(ids[n], f"#{n}")}]},
            {"id": "m1", "role": "assistant", "source": {"kind": "model"}, "content": []},
            {"id": "m2", "role": "user", "source": {"kind": "user"},
             "content": [{"type": "text", "text": dsr.encode_uri(ids[n + 1]) + " and " + dsr.encode_uri(ids[0])}]},
        ]
        pool.append((f"prepare_messages{n}",
                     lambda r, c, m=messages: r.prepare_messages(TARGET, m, cancel=c)))
    for query in ["", "title", "B", "zz"]:
        pool.append((f"candidates{query!r}", lambda r, c, q=query: r.candidates(TARGET, q, cancel=c)))
    for query, limit in [("", 2), ("t", 3), ("/work", None)]:
        pool.append((f"list_candidates{query!r},{limit}",
                     lambda r, c, q=query, n=limit: r.list_candidates(TARGET, q, n, cancel=c)))
    return pool


def without_context_ids(value: Any) -> Any:
    """The result with the fresh UUIDs of context messages blanked."""
    if isinstance(value, list):
        return [without_context_ids(v) for v in value]
    if isinstance(value, dict):
        out = {k: without_context_ids(v) for k, v in value.items()}
        if isinstance(out.get("source"), dict) and out["source"].get("kind") == "session-reference":
            assert isinstance(out.get("id"), str) and len(out["id"]) == 36
            out["id"] = None
        return out
    return value


def outcome(call: Call, resolver: dsr.Resolver, cancel: Optional[dsr.CancelToken]) -> Tuple[str, Any]:
    try:
        return ("ok", without_context_ids(call(resolver, cancel)))
    except dsr.SessionReferenceError as e:
        return ("error", e.code)


def test_one_resolver_shared_by_8_threads_with_random_cancellations() -> None:
    host = SharedHost()
    resolver = dsr.Resolver(host, max_reference_bytes=4000)
    pool = call_pool()
    want = [outcome(call, resolver, None) for _, call in pool]
    codes = {w[1] for w in want if w[0] == "error"}
    assert codes == {"SESSION_REFERENCE_READ_FAILED", "SESSION_REFERENCE_SELF_REFERENCE",
                     "SESSION_REFERENCE_TOO_MANY"}, want
    bytes_refs = {sid: sys.getrefcount(v) for sid, v in host.forms.items() if isinstance(v, bytes)}

    threads, calls_per_thread = 8, 125
    rng = random.Random(8)
    # (pool index, cancellation: None, "before" or a delay in seconds)
    plans = [[(rng.randrange(len(pool)),
               rng.choice([None, None, None, "before", rng.random() / 200]))
              for _ in range(calls_per_thread)] for _ in range(threads)]
    cancels: "queue.PriorityQueue[Tuple[float, int, Optional[dsr.CancelToken]]]" = queue.PriorityQueue()
    results: List[List[Tuple[int, Any, Tuple[str, Any]]]] = [[] for _ in range(threads)]
    crashes: List[BaseException] = []

    def canceller() -> None:
        while True:
            at, _, token = cancels.get()
            if token is None:
                return
            time.sleep(max(0.0, at - time.monotonic()))
            token.cancel()

    def worker(n: int) -> None:
        try:
            for k, (index, cancel) in enumerate(plans[n]):
                token = None if cancel is None else dsr.CancelToken()
                if cancel == "before":
                    assert token is not None
                    token.cancel()
                elif token is not None:
                    assert isinstance(cancel, float)
                    cancels.put((time.monotonic() + cancel, n * 1000 + k, token))
                results[n].append((index, cancel, outcome(pool[index][1], resolver, token)))
        except BaseException as e:  # reported below
            crashes.append(e)

    stopper = threading.Thread(target=canceller, daemon=True)
    stopper.start()
    workers = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(threads)]
    started = time.monotonic()
    for t in workers:
        t.start()
    deadline = started + 240  # the watchdog: a deadlock fails here, with every thread's stack
    for t in workers:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in workers):
        faulthandler.dump_traceback(all_threads=True)
        pytest.fail(f"deadlock: {sum(t.is_alive() for t in workers)} threads still running after 240 s")
    cancels.put((0.0, -1, None))
    stopper.join(10)
    assert crashes == []

    done = [r for per_thread in results for r in per_thread]
    assert len(done) == threads * calls_per_thread
    wrong = []
    cancelled = 0
    for index, cancel, got in done:
        if got == want[index]:
            continue
        if cancel is not None and got == ("error", "SESSION_REFERENCE_CANCELLED"):
            cancelled += 1
            continue
        wrong.append((pool[index][0], cancel, got if got[0] == "error" else "a different result"))
    assert wrong == [], wrong[:5]
    assert cancelled > 0  # the cancellations did interrupt calls
    # No reference to the host's data is left behind.
    for sid, count in bytes_refs.items():
        value = host.forms[sid]
        assert wait_until(lambda: (release_native_refs(), sys.getrefcount(value) <= count)[1]), sid

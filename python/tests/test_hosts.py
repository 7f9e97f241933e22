"""Hosts: sync and async, failures, wrong types, hangs and cancellation,
the GIL, threads and fork."""

from __future__ import annotations

import _thread
import asyncio
import gc
import json
import os
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

import dsh_session_reference as dsr
from helpers import (
    AsyncHost,
    Counter,
    SyncHost,
    make_host,
    snapshot,
    thread_is_running_python,
    wait_until,
)

TARGET = {"id": "target", "cwd": "/w"}
CONTENT = [{"type": "text", "text": "go"}]
SURFACES = {"a": snapshot("a", ["hello <a>", "hi"]), "b": snapshot("b", ["bee"], cwd="/w")}


def test_every_style_gives_the_same_result(host_style: str) -> None:
    results = []
    for style in ["dict", host_style]:
        resolver = dsr.Resolver(make_host(style, surfaces=SURFACES))
        out = resolver.prepare(TARGET, CONTENT, [{"sessionId": "a"}, {"sessionId": "b", "label": "B"}])
        results.append(out["additionalContext"]["content"])
    assert results[0] == results[1]
    assert "\\u003ca>" in results[0][0]["text"]


def test_async_twins_with_sync_and_async_hosts(host_style: str) -> None:
    sessions = [{"id": "a", "createdAt": 1}, {"id": "b", "createdAt": 2, "cwd": "/w"}]
    resolver = dsr.Resolver(make_host(host_style, surfaces=SURFACES, sessions=sessions, titles={"a": "Alpha"}))
    messages = [
        {"id": "m0", "role": "assistant", "source": {"kind": "model"}, "content": []},
        {"id": "m1", "role": "user", "source": {"kind": "user"},
         "content": [{"type": "text", "text": "see " + dsr.format_mention("a", "A")}, {"type": "image"}]},
    ]

    async def main() -> Any:
        return await asyncio.gather(
            resolver.prepare_async(TARGET, CONTENT, [{"sessionId": "a"}]),
            resolver.prepare_messages_async(TARGET, messages),
            resolver.list_candidates_async(TARGET, "", 1),
            resolver.candidates_async(TARGET, "alp"),
        )

    prepared, rewritten, listed, found = asyncio.run(main())
    assert prepared == {**resolver.prepare(TARGET, CONTENT, [{"sessionId": "a"}]),
                        "additionalContext": prepared["additionalContext"]}
    assert [m.get("id") for m in rewritten][:2] == ["m0", "m1"] and len(rewritten) == 3
    assert rewritten[1]["content"] == [{"type": "text", "text": "see @A"}, {"type": "image"}]
    assert rewritten[2]["source"]["references"][0]["label"] == "A"
    assert listed == [{"sessionId": "b", "label": "b", "cwd": "/w", "createdAt": 2}]
    assert found == [{"sessionId": "a", "label": "Alpha", "createdAt": 1,
                      "mention": dsr.format_mention("a", "Alpha")}]
    assert resolver.prepare_messages(TARGET, messages)[1] == rewritten[1]


class Boom(Exception):
    pass


class RaisingHost(SyncHost):
    def read_surface(self, session_id: str) -> Any:
        raise Boom(f"no {session_id}")


class AsyncRaisingHost(AsyncHost):
    async def read_surface(self, session_id: str) -> Any:
        await asyncio.sleep(0)
        raise Boom(f"no {session_id}")


@pytest.mark.parametrize("host_class", [RaisingHost, AsyncRaisingHost])
def test_host_exception_is_the_cause(host_class: type) -> None:
    resolver = dsr.Resolver(host_class())
    for call in [
        lambda: resolver.prepare(TARGET, CONTENT, [{"sessionId": "x"}]),
        lambda: asyncio.run(resolver.prepare_async(TARGET, CONTENT, [{"sessionId": "x"}])),
    ]:
        with pytest.raises(dsr.ReadFailedError) as info:
            call()
        error = info.value
        assert error.code == "SESSION_REFERENCE_READ_FAILED"
        assert isinstance(error.__cause__, Boom) and str(error.__cause__) == "no x"
        assert "Boom: no x" in str(error)


@pytest.mark.parametrize(
    "returned, words",
    [
        (42, "returned int"),
        ([1, 2], "returned list"),
        (b"{not json", "malformed"),
        ("[]", "malformed"),
        ({"session": {"id": "x"}, "events": "nope"}, ""),
        ({"session": {1, 2}}, "set"),
    ],
)
@pytest.mark.parametrize("is_async", [False, True])
def test_wrong_snapshot_is_a_read_failure(returned: Any, words: str, is_async: bool) -> None:
    class Host(SyncHost):
        def read_surface(self, session_id: str) -> Any:
            return returned

    class Async(AsyncHost):
        async def read_surface(self, session_id: str) -> Any:
            return returned

    resolver = dsr.Resolver(Async() if is_async else Host())
    with pytest.raises(dsr.ReadFailedError) as info:
        resolver.prepare(TARGET, CONTENT, [{"sessionId": "x"}])
    assert words in str(info.value)


@pytest.mark.parametrize("returned", [7, {"id": "x"}, [{"id": 1, "createdAt": 1}], "not json", b"{}"])
def test_wrong_listing_is_a_read_failure(returned: Any) -> None:
    class Host(SyncHost):
        def list_sessions(self) -> Any:
            return returned

    with pytest.raises(dsr.ReadFailedError):
        dsr.Resolver(Host()).candidates(TARGET)


def test_listing_failure() -> None:
    class Host(SyncHost):
        def list_sessions(self) -> Any:
            raise Boom("disk on fire")

    with pytest.raises(dsr.ReadFailedError, match="disk on fire"):
        dsr.Resolver(Host()).list_candidates(TARGET)


def test_failing_or_wrong_titles_fall_back_to_the_id() -> None:
    sessions = [{"id": "a", "createdAt": 1}, {"id": "b", "createdAt": 2}, {"id": "c", "createdAt": 3}]

    class Host(SyncHost):
        def read_title(self, session_id: str) -> Any:
            if session_id == "a":
                raise Boom("title")
            return 5 if session_id == "b" else "Sea"

    found = dsr.Resolver(Host(sessions=sessions)).candidates({"id": "t"})
    assert [c["label"] for c in found] == ["a", "b", "Sea"]


def test_listing_as_json_text(host_style: str) -> None:
    sessions = [{"id": "a", "createdAt": 1.5, "cwd": None, "extra": [1]}]
    found = dsr.Resolver(make_host(host_style, sessions=sessions)).list_candidates({"id": "t"})
    assert found == [{"sessionId": "a", "label": "a", "createdAt": 1.5}]


class HangingHost(SyncHost):
    """A host whose reads block until released (without holding the GIL)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()
        self.idents: List[int] = []

    def read_surface(self, session_id: str) -> Any:
        self.idents.append(threading.get_ident())
        self.entered.set()
        self.release.wait()
        return snapshot(session_id, ["late"])

    def list_sessions(self) -> Any:
        self.idents.append(threading.get_ident())
        self.entered.set()
        self.release.wait()
        return []


def test_blocking_call_cancelled_from_another_thread() -> None:
    host = HangingHost()
    resolver = dsr.Resolver(host)
    token = dsr.CancelToken()
    canceller = threading.Thread(target=lambda: (host.entered.wait(), time.sleep(0.1), token.cancel()))
    canceller.start()
    started = time.monotonic()
    with Counter() as counter:
        before = counter.count
        with pytest.raises(dsr.OperationCancelledError) as info:
            resolver.prepare(TARGET, CONTENT, [{"sessionId": "x"}], cancel=token)
        assert counter.count > before  # the GIL was free while we waited
    assert time.monotonic() - started < 5
    assert info.value.code == "SESSION_REFERENCE_CANCELLED"
    assert token.is_cancelled() and "cancelled=True" in repr(token)
    canceller.join()
    # The abandoned host thread holds no GIL: it finishes once released.
    [ident] = host.idents
    assert thread_is_running_python(ident)
    host.release.set()
    assert wait_until(lambda: not thread_is_running_python(ident))


def test_listing_cancelled() -> None:
    host = HangingHost()
    token = dsr.CancelToken()
    threading.Timer(0.1, token.cancel).start()
    with pytest.raises(dsr.OperationCancelledError):
        dsr.Resolver(host).candidates(TARGET, "q", cancel=token)
    host.release.set()


def test_already_cancelled_token() -> None:
    token = dsr.CancelToken()
    token.cancel()
    token.cancel()
    host = make_host("dict", surfaces=SURFACES)
    with pytest.raises(dsr.OperationCancelledError):
        dsr.Resolver(host).prepare(TARGET, CONTENT, [{"sessionId": "a"}], cancel=token)
    with pytest.raises(dsr.OperationCancelledError):
        asyncio.run(dsr.Resolver(host).prepare_async(TARGET, CONTENT, [{"sessionId": "a"}], cancel=token))
    assert host.calls == []
    # No references: nothing to read, nothing to cancel.
    assert dsr.Resolver(host).prepare(TARGET, CONTENT, [], cancel=token) == {"content": CONTENT}


class ForeverAsyncHost(AsyncHost):
    """An async host whose reads never complete; records their cancellation."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.loops: List[asyncio.AbstractEventLoop] = []

    async def read_surface(self, session_id: str) -> Any:
        self.loops.append(asyncio.get_running_loop())
        self.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return {}


def test_async_task_cancellation_cancels_the_work() -> None:
    host = ForeverAsyncHost()
    resolver = dsr.Resolver(host)

    async def main() -> None:
        task = asyncio.create_task(resolver.prepare_async(TARGET, CONTENT, [{"sessionId": "x"}]))
        while not host.started.is_set():
            await asyncio.sleep(0.01)
        assert host.loops == [asyncio.get_running_loop()]  # run on the caller's loop
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(500):
            if host.cancelled.is_set():
                break
            await asyncio.sleep(0.01)
        assert host.cancelled.is_set()

    asyncio.run(asyncio.wait_for(main(), 20))


def test_async_call_cancelled_by_token() -> None:
    host = ForeverAsyncHost()
    token = dsr.CancelToken()

    async def main() -> None:
        asyncio.get_running_loop().call_later(0.1, token.cancel)
        with pytest.raises(dsr.OperationCancelledError):
            await dsr.Resolver(host).prepare_async(TARGET, CONTENT, [{"sessionId": "x"}], cancel=token)
        for _ in range(500):
            if host.cancelled.is_set():
                break
            await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(main(), 20))
    assert host.cancelled.is_set()


def test_blocking_call_with_hanging_async_host() -> None:
    host = ForeverAsyncHost()
    token = dsr.CancelToken()
    threading.Thread(target=lambda: (host.started.wait(), token.cancel())).start()
    with pytest.raises(dsr.OperationCancelledError):
        dsr.Resolver(host).prepare(TARGET, CONTENT, [{"sessionId": "x"}], cancel=token)
    assert wait_until(host.cancelled.is_set)
    [loop] = host.loops
    assert loop is not None  # the package's background loop, not a new one per call


def test_async_call_with_hanging_sync_host_cancelled_by_task() -> None:
    host = HangingHost()

    async def main() -> None:
        task = asyncio.create_task(dsr.Resolver(host).candidates_async(TARGET))
        await asyncio.get_running_loop().run_in_executor(None, host.entered.wait)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), 20))
    host.release.set()
    [ident] = host.idents
    assert wait_until(lambda: not thread_is_running_python(ident))


def test_keyboard_interrupt_cancels_a_blocking_call() -> None:
    host = HangingHost()
    threading.Thread(target=lambda: (host.entered.wait(), _thread.interrupt_main())).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        dsr.Resolver(host).prepare(TARGET, CONTENT, [{"sessionId": "x"}])
    assert time.monotonic() - started < 5
    host.release.set()


def test_other_threads_run_during_a_long_prepare() -> None:
    # A big snapshot handed over as bytes: all the work is native.
    texts = [("x" * 2000 + f" message {i} <tag>") for i in range(6000)]
    big = json.dumps(snapshot("big", texts)).encode()

    class Host(SyncHost):
        def read_surface(self, session_id: str) -> Any:
            return big

    resolver = dsr.Resolver(Host())
    with Counter() as counter:
        before = counter.count
        started = time.monotonic()
        out = resolver.prepare(TARGET, CONTENT, [{"sessionId": "big"}])
        elapsed = time.monotonic() - started
        during = counter.count - before
    meta = out["additionalContext"]["source"]["references"][0]
    assert meta["originalMessages"] == 6000 and meta["truncated"]
    assert during > 0, f"no Python progress in {elapsed:.3f}s"


def test_many_threads_share_one_resolver(host_style: str) -> None:
    resolver = dsr.Resolver(make_host(host_style, surfaces=SURFACES))
    want = resolver.prepare(TARGET, CONTENT, [{"sessionId": "a"}])["additionalContext"]["content"]
    errors: List[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                got = resolver.prepare(TARGET, CONTENT, [{"sessionId": "a"}, {"sessionId": "b"}])
                assert got["additionalContext"]["source"]["references"][0]["sessionId"] == "a"
            assert resolver.prepare(TARGET, CONTENT, [{"sessionId": "a"}])["additionalContext"]["content"] == want
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_reads_run_in_parallel() -> None:
    # Many rounds: a read may be queued after the first library thread is
    # already blocked in the host; it must still get a thread of its own.
    for _ in range(300):
        barrier = threading.Barrier(3, timeout=10)

        class Host(SyncHost):
            def read_surface(self, session_id: str) -> Any:
                barrier.wait()  # only passes if all three reads are in flight at once
                return snapshot(session_id, [session_id])

        out = dsr.Resolver(Host()).prepare(TARGET, CONTENT, [{"sessionId": s} for s in "xyz"])
        assert len(out["additionalContext"]["source"]["references"]) == 3


def test_bytes_snapshot_outlives_the_host() -> None:
    class Host(SyncHost):
        def read_surface(self, session_id: str) -> Any:
            return json.dumps(snapshot(session_id, ["kept"])).encode()

    resolver = dsr.Resolver(Host())
    for _ in range(3):
        out = resolver.prepare(TARGET, CONTENT, [{"sessionId": "a"}])
        gc.collect()
        assert '"text":"kept"' in out["additionalContext"]["content"][0]["text"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_works_in_a_forked_child() -> None:
    resolver = dsr.Resolver(make_host("dict", surfaces=SURFACES))
    resolver.prepare(TARGET, CONTENT, [{"sessionId": "a"}])  # the parent's workers exist
    async_resolver = dsr.Resolver(make_host("async", surfaces=SURFACES))
    async_resolver.prepare(TARGET, CONTENT, [{"sessionId": "a"}])  # and its background loop
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            out = resolver.prepare(TARGET, CONTENT, [{"sessionId": "a"}])
            again = async_resolver.prepare(TARGET, CONTENT, [{"sessionId": "b"}])
            os._exit(0 if "additionalContext" in out and "additionalContext" in again else 1)
        except BaseException:
            os._exit(2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")

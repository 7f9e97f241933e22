"""How native calls meet asyncio (internal).

* Host coroutines. When a host method returns an awaitable, the native
  worker thread calls :func:`submit`, which schedules it with
  :func:`asyncio.run_coroutine_threadsafe` on the event loop of the asyncio
  caller (free: its task is awaiting the library), or, for a blocking
  caller, on one background loop thread owned by this module. The native
  side never blocks a thread waiting for it, and cancels the returned
  :class:`concurrent.futures.Future` when the call is cancelled.
* Async calls. :func:`call` starts a native call that reports back through
  ``loop.call_soon_threadsafe``; if the awaiting task is cancelled, the
  call's :class:`CancelToken` is cancelled too.

Deadlocks are avoided because no thread ever waits while holding the GIL
or while being the loop that has to run the awaited coroutine: the asyncio
caller's loop only awaits a future, and a blocking caller's coroutines run
on a loop that never waits for the library.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from typing import Any, Awaitable, Callable, Coroutine, Optional, TypeVar

from ._native import CancelToken

T = TypeVar("T")

_lock = threading.Lock()
_background: Optional[asyncio.AbstractEventLoop] = None
_background_thread: Optional[threading.Thread] = None
_background_pid = 0


def background_loop() -> asyncio.AbstractEventLoop:
    """The event loop that runs host coroutines for blocking callers."""
    global _background, _background_thread, _background_pid
    with _lock:
        # After fork() the parent's loop thread does not exist in the child.
        if _background is None or _background.is_closed() or _background_pid != os.getpid():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="dsh-session-reference-asyncio", daemon=True
            )
            thread.start()
            _background = loop
            _background_thread = thread
            _background_pid = os.getpid()
        return _background


def stop_background_loop(timeout: float) -> None:
    """At exit: cancels the host coroutines still running on the background
    loop, stops it and waits up to ``timeout`` seconds for its thread to end,
    so that no thread of the package runs Python code (the native
    completion callbacks of those coroutines among it) once the interpreter
    finalizes. Best effort: a coroutine that ignores its cancellation is
    left pending."""
    with _lock:
        loop, thread = _background, _background_thread
        if loop is None or thread is None or _background_pid != os.getpid():
            return

    def stop() -> None:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        # The tasks take the cancellation in the next iteration and run
        # their done-callbacks (the native completions) in the one after.
        loop.call_soon(loop.call_soon, loop.stop)

    try:
        loop.call_soon_threadsafe(stop)
    except RuntimeError:  # closed
        return
    thread.join(timeout)
    if not thread.is_alive():
        loop.close()


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


def submit(
    awaitable: Awaitable[Any], loop: Optional[asyncio.AbstractEventLoop]
) -> concurrent.futures.Future[Any]:
    """Schedules a host awaitable on ``loop`` (default: the background loop)."""
    coroutine: Coroutine[Any, Any, Any]
    if asyncio.iscoroutine(awaitable):
        coroutine = awaitable
    else:
        coroutine = _await(awaitable)
    return asyncio.run_coroutine_threadsafe(
        coroutine, loop if loop is not None else background_loop()
    )


async def call(
    start: Callable[..., None], *args: Any, cancel: Optional[CancelToken]
) -> Any:
    """Runs a native ``_start_*`` method and awaits its result."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    token = CancelToken()

    def done(ok: bool, value: Any) -> None:
        if future.done():  # the awaiting task was cancelled meanwhile
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    start(*args, cancel, token, loop, done)
    try:
        return await future
    except BaseException:
        token.cancel()
        raise

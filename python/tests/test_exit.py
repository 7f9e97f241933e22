"""The interpreter exits cleanly right after library threads handed results
back to Python (they used to be killed mid-call by finalization, which
crashed the process now and then)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from helpers import FIXTURES

SCRIPT = textwrap.dedent(
    """
    import asyncio
    import dsh_session_reference as dsr

    SURFACE = {"session": {"id": "s", "createdAt": 1}, "capturedThroughSeq": 0, "events": [
        {"seq": 0, "type": "user/message", "data": {"role": "user",
            "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}}]}

    class Host:
        def list_sessions(self):
            return [{"id": "s", "createdAt": 1}]
        def read_title(self, session_id):
            return "title"
        def read_surface(self, session_id):
            return SURFACE

    resolver = dsr.Resolver(Host())
    keep = {"resolver": resolver}

    async def main():
        for _ in range(5):
            await resolver.prepare_async({"id": "t"}, "x", [{"sessionId": "s"}])
            await resolver.candidates_async({"id": "t"}, "tit")

    asyncio.run(main())
    print("ok")
    """
)


def test_exit_after_async_calls_is_clean() -> None:
    for _ in range(25):
        done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])


def test_calls_from_a_later_atexit_handler() -> None:
    """An atexit handler registered before the package was imported runs
    after the package's exit hook: host reads then fail, native reads work,
    and an async call raises at once rather than wait for good."""
    script = textwrap.dedent(
        """
        import asyncio
        import atexit
        import sys

        SURFACE = {"session": {"id": "s", "createdAt": 1}, "capturedThroughSeq": 0, "events": [
            {"seq": 0, "type": "user/message", "data": {"role": "user",
                "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}}]}

        class Host:
            def list_sessions(self):
                return [{"id": "s", "createdAt": 1}]
            def read_title(self, session_id):
                return "title"
            def read_surface(self, session_id):
                return SURFACE

        def late():
            import dsh_session_reference as dsr
            try:
                dsr.Resolver(Host()).prepare({"id": "t"}, "x", [{"sessionId": "s"}])
            except dsr.ReadFailedError as e:
                print("blocking:", e)
            store = dsr.DshSessionStore(sys.argv[1])
            print("native:", len(dsr.Resolver(store).list_candidates({"id": "t"})))
            try:
                asyncio.run(dsr.Resolver(Host()).prepare_async({"id": "t"}, "x", [{"sessionId": "s"}]))
            except RuntimeError as e:
                print("async:", e)

        atexit.register(late)
        import dsh_session_reference as dsr
        dsr.Resolver(Host()).prepare({"id": "t"}, "x", [{"sessionId": "s"}])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(FIXTURES / "raw")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == 'blocking: reading session "s" failed: read_surface: the Python interpreter is shutting down'
    assert lines[1].startswith("native: ") and int(lines[1].split()[1]) > 0
    assert lines[2].startswith("async: ") and "shutting down" in lines[2]

"""The interpreter exits cleanly right after library threads handed results
back to Python (they used to be killed mid-call by finalization, which
crashed the process now and then)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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

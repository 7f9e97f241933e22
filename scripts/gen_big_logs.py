#!/usr/bin/env python3
"""Generates big session logs for the memory benchmarks of BENCHMARKS.md
("Memory"): a DSH v4 log of tool output or of conversation, and a
Claude Code transcript or a Codex rollout, each about SIZE megabytes. Nothing is committed but
this script; delete the output when done.

    scripts/gen_big_logs.py OUT_DIR KIND SIZE_MB [--varied]
    KIND: dsh-tools | dsh-talk | dsh-messages | claude | codex

dsh-messages is a DSH v4 log of turns of one 500-byte prompt and one
500-byte answer and nothing else: 90 MB hold about 100,000 messages.

The texts are slices of one pool of words. By default the pool repeats a
few dozen words (the logs compress about 150x, so a session's index is
tiny beside the process); with --varied it is 64 MB of words drawn at
random from a vocabulary of 20,000 made-up words, so that the texts
compress about as much as real conversation does (3-4x).

OUT_DIR then holds a DSH sessions root (OUT_DIR/dsh), a Claude Code
projects root (OUT_DIR/claude) or a Codex home (OUT_DIR/codex).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "..", "tests", "fixtures", "dsh-generations", "raw",
                        "--home-dev-gen--", "tool-call-turn", "session.v4.jsonl")


POOL = []
VARIED = "--varied" in sys.argv


def varied_pool():
    import random
    rng = random.Random(7)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    vocab = ["".join(rng.choice(letters[:rng.randint(8, 26)]) for _ in range(rng.randint(2, 11)))
             for _ in range(20000)]
    out, size = [], 0
    while size < 64_000_000:
        chunk = " ".join(rng.choices(vocab, k=10000))
        out.append(chunk)
        size += len(chunk) + 1
    return " ".join(out)


def words(n, salt):
    """About n bytes of varied ASCII text (different per salt): a slice of
    a pool of words made once (generating each text word by word made a
    1 GB log take most of an hour)."""
    if not POOL and VARIED:
        POOL.append(varied_pool())
    if not POOL:
        base = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
                "pi rho sigma tau upsilon phi chi psi omega ").split()
        POOL.append(" ".join(base[(i * 7 + i // 24) % len(base)] + str(i % 97) for i in range(400000)))
    pool = POOL[0]
    start = (salt * 7919) % (len(pool) - n - 1)
    return pool[start:start + n]


def dump(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def shift_seqs(ev, offset):
    if "seq" in ev:
        ev["seq"] += offset
    if "sourceEventSeqs" in ev:
        ev["sourceEventSeqs"] = [s + offset if isinstance(s, int) else [a + offset for a in s]
                                 for s in ev["sourceEventSeqs"]]
    d = ev.get("data")
    if isinstance(d, dict) and "messageSeqs" in d:
        d["messageSeqs"] = [s + offset for s in d["messageSeqs"]]


def set_texts(content, text):
    for block in content:
        if block.get("type") == "text":
            block["text"] = text


def dsh(out, kind, size):
    lines = [json.loads(l) for l in open(TEMPLATE, encoding="utf-8")]
    header, events = lines[0], lines[1:]
    header["id"] = "big-" + kind
    header["cwd"] = "/home/dev/big"
    pre, turn = events[:3], events[3:]  # seqs 0-2, then one turn of seqs 3..20
    d = os.path.join(out, "dsh", "--home-dev-big--", "big-" + kind)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "session.v4.jsonl")
    period = len(turn)
    with open(path, "w", encoding="utf-8") as f:
        f.write(dump(header) + "\n")
        for ev in pre:
            f.write(dump(ev) + "\n")
        n, written = 0, 0
        while written < size:
            for tmpl in turn:
                ev = json.loads(dump(tmpl))
                shift_seqs(ev, n * period)
                t, data = ev["type"], ev.get("data", {})
                if isinstance(data, dict):
                    if "turn" in data:
                        data["turn"] = n + 1
                    msg = data.get("message")
                    if isinstance(msg, dict) and "id" in msg:
                        msg["id"] = f"{msg['id']}-{n}"
                    if "id" in data and t == "user/message":
                        data["id"] = f"{data['id']}-{n}"
                if t == "agent/inbox/spliced" and data.get("inserted"):
                    user_text = f"turn {n}: " + words(200 if kind == "dsh-tools" else 4000, n)
                    for ins in data["inserted"]:
                        ins["id"] = f"{ins['id']}-{n}"
                        set_texts(ins["content"], user_text)
                if t == "user/message" and data.get("source", {}).get("kind") == "user":
                    set_texts(data["content"], user_text)
                if t == "tool/result" and kind == "dsh-tools":
                    set_texts(data["message"]["content"], words(60000, n))
                if t == "assistant/message" and kind == "dsh-talk":
                    set_texts(data["message"]["content"], f"answer {n}: " + words(4000, n + 1))
                line = dump(ev) + "\n"
                f.write(line)
                written += len(line.encode())
            n += 1
    return path


def dsh_messages(out, size):
    """Turns of a 500-byte prompt and a 500-byte answer, with no tool
    calls or streams: a log that is all conversation."""
    header = json.loads(open(TEMPLATE, encoding="utf-8").readline())
    header["id"] = "big-dsh-messages"
    header["cwd"] = "/home/dev/big"
    d = os.path.join(out, "dsh", "--home-dev-big--", "big-dsh-messages")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "session.v4.jsonl")
    seq, n, written = 0, 0, 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(dump(header) + "\n")
        while written < size:
            turn, step = {"turn": n + 1}, {"turn": n + 1, "step": 1}
            source = {"kind": "model", "provider": "p", "model": "m"}
            for t, data, op in [
                ("turn/start", turn, None),
                ("step/start", step, None),
                ("user/message", {"content": [{"type": "text", "text": f"question {n}: " + words(500, n)}],
                                  "source": {"kind": "user"}, "role": "user", "id": f"u{n}"}, "append"),
                ("assistant/message", dict(step, message={
                    "role": "assistant", "content": [{"type": "text", "text": f"answer {n}: " + words(500, n + 1)}],
                    "source": source, "id": f"a{n}"}), "append"),
                ("step/end", step, None),
                ("turn/end", dict(turn, reason={"kind": "completed"}), None),
            ]:
                ev = {"type": t, "seq": seq, "time": 1780000501000 + seq, "data": data}
                if op:
                    ev["surfaceOp"] = op
                line = dump(ev) + "\n"
                f.write(line)
                written += len(line.encode())
                seq += 1
            n += 1
    return path


def claude(out, size):
    d = os.path.join(out, "claude", "-home-dev-big")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "0b9f4c56-1111-4222-8333-944455556666.jsonl")
    parent, n, written = None, 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < size:
            for role in ("user", "assistant"):
                uuid = f"00000000-0000-4000-8000-{n:012d}"
                if role == "user":
                    message = {"role": "user", "content": f"question {n}: " + words(3000, n)}
                else:
                    message = {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude",
                               "content": [{"type": "text", "text": f"answer {n}: " + words(6000, n + 1)}]}
                line = {"parentUuid": parent, "isSidechain": False, "userType": "external",
                        "cwd": "/home/dev/big", "sessionId": "0b9f4c56-1111-4222-8333-944455556666",
                        "version": "2.1.5", "type": role, "message": message, "uuid": uuid,
                        "timestamp": f"2026-11-01T10:{(n // 60) % 60:02d}:{n % 60:02d}.000Z"}
                s = dump(line) + "\n"
                f.write(s)
                written += len(s.encode())
                parent = uuid
                n += 1
    return path


def codex(out, size):
    """A Codex rollout of 3 KB prompts and 6 KB answers, each turn with a
    reasoning item, a tool call and its output (as Codex writes them)."""
    sid = "0199c0de-1111-7222-8333-944455556666"
    d = os.path.join(out, "codex", "sessions", "2026", "11", "01")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"rollout-2026-11-01T10-00-00-{sid}.jsonl")
    n, written = 0, 0

    def line(kind, payload):
        ts = f"2026-11-01T10:{(n // 60) % 60:02d}:{n % 60:02d}.000Z"
        return dump({"timestamp": ts, "type": kind, "payload": payload}) + "\n"

    with open(path, "w", encoding="utf-8") as f:
        first = line("session_meta", {"id": sid, "timestamp": "2026-11-01T10:00:00.000Z", "cwd": "/home/dev/big",
                                      "cli_version": "0.150.0"})
        f.write(first)
        written += len(first.encode())
        while written < size:
            turn = [
                line("turn_context", {"cwd": "/home/dev/big", "model": "gpt"}),
                line("response_item", {"type": "message", "role": "user",
                                       "content": [{"type": "input_text", "text": f"question {n}: " + words(3000, n)}]}),
                line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x" * 200}),
                line("response_item", {"type": "function_call", "name": "shell", "arguments": "{}",
                                       "call_id": f"c{n}"}),
                line("response_item", {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"}),
                line("response_item", {"type": "message", "role": "assistant",
                                       "content": [{"type": "output_text",
                                                    "text": f"answer {n}: " + words(6000, n + 1)}]}),
            ]
            for s in turn:
                f.write(s)
                written += len(s.encode())
            n += 1
    return path


def main():
    args = [a for a in sys.argv[1:] if a != "--varied"]
    out, kind, size_mb = args[0], args[1], float(args[2])
    size = int(size_mb * 1e6)
    if kind == "claude":
        path = claude(out, size)
    elif kind == "codex":
        path = codex(out, size)
    elif kind == "dsh-messages":
        path = dsh_messages(out, size)
    else:
        path = dsh(out, kind, size)
    print(path, os.path.getsize(path))


if __name__ == "__main__":
    main()

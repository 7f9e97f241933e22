"""A DSH root for the teams benchmark (BENCHMARKS.md, "Teams"): N sessions in
20 projects (/work/p0 .. /work/p19), each 12 messages of 40 to 120 words of a
3,000-word vocabulary ("the" common), one rare word ("zyxquartz") in one
session. Deterministic.

Usage: python3 scripts/teams_bench_root.py N ROOT
"""
import json, os, random, sys
n = int(sys.argv[1]); root = sys.argv[2]
rng = random.Random(7)
vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(3000)] + ["the"] * 200
for i in range(n):
    sid = f"session-{i:06d}"; cwd = f"/work/p{i % 20}"
    d = os.path.join(root, f"--work-p{i % 20}--", sid); os.makedirs(d, exist_ok=True)
    lines = [{"type": "session", "version": 0, "id": sid, "createdAt": 1700000000000 + i, "cwd": cwd, "delegationDepth": 0}]
    for seq in range(12):
        text = " ".join(rng.choice(vocab) for _ in range(rng.randint(40, 120)))
        if i == n // 2 and seq == 5: text += " zyxquartz"
        content = [{"type": "text", "text": text}]
        if seq % 2 == 0:
            lines.append({"type": "user/message", "seq": seq, "time": seq, "surfaceOp": "append", "data": {"id": f"u{seq}", "role": "user", "content": content, "source": {"kind": "user"}}})
        else:
            lines.append({"type": "assistant/message", "seq": seq, "time": seq, "surfaceOp": "append", "data": {"turn": seq, "step": 1, "message": {"id": f"a{seq}", "role": "assistant", "content": content, "source": {"kind": "model", "provider": "p", "model": "m"}}}})
    with open(os.path.join(d, "session.jsonl"), "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))

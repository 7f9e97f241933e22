"""The README's examples as a user runs them.

Each ```python block is saved as a file in a fresh directory outside the
repository and run with ``python FILE`` from there, with the environment
variables the README's ``sh`` block exports (run with bash, this checkout
standing for its ``/path/to/checkout``). A block followed by a ```text block
must print exactly that. Standard library only: tests/test_readme.py runs it
against the wheel installed for the tests, scripts/test-dist.sh as a script
(``python readme_examples.py``) against the released wheel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
REPO = README.parent.parent


def readme_examples(readme: Path = README) -> list[tuple[str, str | None]]:
    """The ```python blocks, each with the ```text block right after it (or None)."""
    blocks = re.findall(r"```(\w+)\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    return [
        (body, blocks[i + 1][1] if i + 1 < len(blocks) and blocks[i + 1][0] == "text" else None)
        for i, (lang, body) in enumerate(blocks)
        if lang == "python"
    ]


def readme_env(cwd: Path, readme: Path = README) -> dict[str, str]:
    """The DSR_ variables the README's sh block exports, run from ``cwd``."""
    blocks = re.findall(r"```sh\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    block = next((b for b in blocks if re.search(r"^export DSR_", b, re.M)), None)
    if block is None:
        return {}
    names = re.findall(r"^export (DSR_\w+)=", block, re.M)
    script = "{\n%s\n} >/dev/null\n%s\n" % (
        block.replace("/path/to/checkout", str(REPO)),
        "\n".join(f"printf '%s\\0' \"${name}\"" for name in names),
    )
    values = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, check=True, capture_output=True, text=True)
    env = dict(zip(names, values.stdout.split("\0")))
    for name, value in env.items():
        if not value or not Path(value).exists():
            raise AssertionError(f"the README's {name}={value!r} does not exist")
    return env


def user_dir() -> Path:
    """A fresh directory outside the repository."""
    path = Path(tempfile.mkdtemp(prefix="dsr-python-readme-")).resolve()
    if path.is_relative_to(REPO.resolve()):
        raise AssertionError(f"{path} is inside the repository: set TMPDIR elsewhere")
    return path


def run_readme_examples(python: str = sys.executable, readme: Path = README) -> int:
    """Runs every example as ``python example-N.py``; returns how many ran."""
    examples = readme_examples(readme)
    assert examples, f"{readme} has no Python example"
    here = user_dir()
    try:
        env = {**os.environ, **readme_env(here, readme)}
        env.pop("PYTHONPATH", None)
        for i, (code, output) in enumerate(examples):
            name = f"example-{i}.py"
            (here / name).write_text(code, encoding="utf-8")
            run = subprocess.run([python, name], cwd=here, env=env, capture_output=True, text=True, timeout=120)
            if run.returncode != 0:
                raise AssertionError(f"{name} (in {here}) failed:\n{run.stdout}{run.stderr}")
            if output is not None and run.stdout != output:
                raise AssertionError(f"{name} printed\n{run.stdout}\ninstead of\n{output}")
    finally:
        shutil.rmtree(here, ignore_errors=True)
    return len(examples)


if __name__ == "__main__":
    print(f"{run_readme_examples()} README example(s) ran as scripts, from outside the repository")

"""Content keys of `make test`'s nbval stage: what it checks, hashed, so a notebook is re-executed
exactly when something it checks has changed (file contents, never modification times: a rebuild that
writes the same bytes changes nothing). The unit and browser stages keep one record per test instead
(tests/_memo.py).

One key per executed notebook (``_build/jupyter_execute``): its code cells (source, tags, outputs),
kernelspec, and what re-executing it depends on: ``attn/``, the pins and ``tests/nbval_sanitize.cfg``.
Markdown cells are not part of it (nbval compares code-cell outputs only), so a prose edit
re-executes nothing.

Usage (the Makefile's)::

    python tools/stages.py todo nbval     # the notebooks whose key differs from the last pass
    python tools/stages.py pass nbval NOTEBOOK...   # record that these passed
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
EXECUTED = BUILD / "jupyter_execute"
STAMPS = BUILD / ".stage-keys"
NBVAL_DEPENDS = ("attn/*.py", "pyproject.toml", "constraints.txt", "requirements*.txt",
                 "tests/nbval_sanitize.cfg")


def _files_digest(patterns, digest) -> None:
    for path in sorted({p for pattern in patterns for p in ROOT.glob(pattern) if p.is_file()}):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")


def nbval_key(notebook: Path) -> str:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    checked = [{"source": cell.get("source"), "outputs": cell.get("outputs"),
                "tags": cell.get("metadata", {}).get("tags", [])}
               for cell in nb["cells"] if cell["cell_type"] == "code"]
    digest = hashlib.sha256(json.dumps([nb["metadata"].get("kernelspec"), checked], sort_keys=True).encode())
    _files_digest(NBVAL_DEPENDS, digest)
    return digest.hexdigest()


def _stamp(stage: str, name: str) -> Path:
    return STAMPS / stage / (name.replace("/", "__") + ".key")


def _notebooks(args: list[str]) -> list[Path]:
    return [Path(a).resolve() for a in args] if args else sorted(EXECUTED.rglob("*.ipynb"))


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("todo", "pass") or argv[1] != "nbval":
        print(__doc__, file=sys.stderr)
        return 2
    action, stage, rest = argv[0], argv[1], argv[2:]
    for item in _notebooks(rest):
        name, key = item.relative_to(EXECUTED).as_posix(), nbval_key(item)
        stamp = _stamp(stage, name)
        if action == "todo":
            if not stamp.is_file() or stamp.read_text(encoding="utf-8") != key:
                print(item.relative_to(ROOT).as_posix())
        else:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(key, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

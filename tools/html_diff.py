"""Compare two built sites byte for byte, the way ``diff -r`` does, ignoring nothing.

Prints every file only in one tree, every file whose bytes differ (with the changed lines of a text
file, a few per file), and a last line with the counts. Exits 1 if anything differs, else 0.
Used to show that a refactor of the build changes no published byte:

    cp -a _build/html /tmp/before     # a build of the starting commit
    make book                         # the changed build
    python tools/html_diff.py /tmp/before _build/html

Usage: python tools/html_diff.py BEFORE AFTER [--lines N]   (N changed lines shown per file, default 6)
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path


def tree(root: Path) -> dict[str, Path]:
    """Every file and symlink under ``root``, by its path relative to it (POSIX separators)."""
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def changed_lines(before: bytes, after: bytes, limit: int) -> list[str]:
    """The first ``limit`` removed/added lines of two UTF-8 texts; [] when either is not text."""
    try:
        old, new = before.decode("utf-8").splitlines(), after.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return []
    lines = [line for line in difflib.unified_diff(old, new, lineterm="", n=0)
             if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    shown = [line if len(line) <= 200 else line[:200] + " [...]" for line in lines[:limit]]
    return shown + ([f"... {len(lines) - limit} more changed lines"] if len(lines) > limit else [])


def compare(before: Path, after: Path, limit: int = 6) -> list[str]:
    """The report lines; empty when the two trees hold the same files with the same bytes."""
    old, new = tree(before), tree(after)
    report = [f"only in {before}: {name}" for name in sorted(old.keys() - new.keys())]
    report += [f"only in {after}: {name}" for name in sorted(new.keys() - old.keys())]
    differ = 0
    for name in sorted(old.keys() & new.keys()):
        a, b = old[name].read_bytes(), new[name].read_bytes()
        if a != b:
            differ += 1
            report.append(f"differ: {name} ({len(a)} -> {len(b)} bytes)")
            report += [f"    {line}" for line in changed_lines(a, b, limit)]
    if report:
        report.append(f"{len(old.keys() ^ new.keys())} files in one tree only, {differ} files differ, "
                      f"{len(old.keys() & new.keys()) - differ} identical")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--lines", type=int, default=6)
    args = parser.parse_args(argv)
    for root in (args.before, args.after):
        if not root.is_dir():
            parser.error(f"{root} is not a directory")
    report = compare(args.before, args.after, args.lines)
    print("\n".join(report) if report else f"identical: {len(tree(args.before))} files, every byte the same")
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main())

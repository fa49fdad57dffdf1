"""Execute the book's notebook pages into the execution cache, two at a time, before the build.

myst-nb (``execute_notebooks: cache``) executes each page that misses the cache while Sphinx reads
it, one page after another, so on a fresh clone one core waits while the other executes. This
script fills the same cache first, with the pages side by side: it reads each page as myst-nb does
(``myst_nb.core.read``), skips the pages the cache already matches (jupyter-cache hashes the code
cells and the kernelspec), executes the others with the function myst-nb calls
(``jupyter_cache.executors.utils.single_nb_execution``, in the page's own folder, with the book's
timeout) and stores each result as myst-nb stores it. The build then finds every page cached.

A page that fails here is not stored, and the build executes it again and reports the failure
itself (``-W``): this script never decides whether the book builds.

Usage: ``python tools/execute_pages.py CACHE_DIR [--jobs N]`` (the Makefile's ``book`` target).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution
from myst_nb.core.read import read_myst_markdown_notebook

ROOT = Path(__file__).resolve().parent.parent


def notebook_pages(root: Path = ROOT) -> list[Path]:
    """The book's MyST notebook pages: Markdown files under book/ with a kernelspec."""
    pages = []
    for path in sorted((root / "book").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if text.startswith("---") and "kernelspec:" in text.split("\n---", 1)[0]:
            pages.append(path)
    return pages


def _read(path: Path):
    return read_myst_markdown_notebook(path.read_text(encoding="utf-8"), add_source_map=True, path=path)


def _execute(path: str, timeout: int) -> tuple[str, object, float, str | None]:
    """Run in a worker process: the executed notebook, its time, and the error text if it failed."""
    notebook = _read(Path(path))
    result = single_nb_execution(notebook, cwd=str(Path(path).parent), timeout=timeout,
                                 allow_errors=False, meta_override=True)
    return path, notebook, result.time, (result.exc_string if result.err is not None else None)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cache", type=Path)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    timeout = int(yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["execute"]["timeout"])
    cache = get_cache(str(args.cache))
    todo = []
    for page in notebook_pages():
        try:
            cache.match_cache_notebook(_read(page))
        except KeyError:
            todo.append(page)
    if not todo:
        print("execute_pages: every page is in the execution cache")
        return 0
    # the largest pages first (the training pages), so the last to finish is a short one
    todo.sort(key=lambda p: p.stat().st_size, reverse=True)
    print(f"execute_pages: {len(todo)} page(s) to execute, {args.jobs} at a time")
    start = time.monotonic()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(_execute, str(page), timeout) for page in todo]
        for future in as_completed(futures):
            path, notebook, seconds, error = future.result()
            rel = Path(path).relative_to(ROOT)
            if error is not None:
                print(f"execute_pages: {rel} failed; the build will execute it and report:\n{error[-2000:]}")
                continue
            cache.cache_notebook_bundle(CacheBundleIn(notebook, path, data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"execute_pages: {rel} in {seconds:.1f} s")
    print(f"execute_pages: {len(todo)} page(s) in {time.monotonic() - start:.0f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Write every executed notebook page, with its outputs, to _build/jupyter_execute/.

myst-nb (1.4) writes the executed notebook next to the HTML only when it really
executes a page; when it serves the page from jupyter-cache it writes the notebook
*without* outputs (the cached copy is merged into another object). nbval would then
compare nothing and pass. This script, run by `make book` after the build, takes each
notebook page in the TOC, finds its executed copy in the jupyter-cache and writes it
out with outputs and execution counts. A page missing from the cache is an error.

Usage: python tools/export_executed.py [BUILD_DIR]   (default: _build)
"""
from __future__ import annotations

import pathlib
import sys

import nbformat
import yaml
from jupyter_cache import get_cache
from myst_nb.core.read import read_myst_markdown_notebook

ROOT = pathlib.Path(__file__).resolve().parent.parent


def toc_pages() -> list[pathlib.Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            names.append(chapter["file"])
            names.extend(s["file"] for s in chapter.get("sections", []))
    pages = []
    for name in names:
        path = ROOT / f"{name}.md"
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if text.startswith("---") and "kernelspec:" in text.split("---")[1]:
            pages.append(path)
    return pages


def main() -> int:
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "_build")
    cache = get_cache(str(build / ".jupyter_cache"))
    missing = []
    for page in toc_pages():
        nb = read_myst_markdown_notebook(page.read_text(encoding="utf-8"), path=str(page))
        try:
            _, merged = cache.merge_match_into_notebook(nb)
        except KeyError:
            missing.append(str(page.relative_to(ROOT)))
            continue
        out = build / "jupyter_execute" / page.relative_to(ROOT).with_suffix(".ipynb")
        out.parent.mkdir(parents=True, exist_ok=True)
        for i, cell in enumerate(merged.cells):  # the reader draws random cell ids: make them stable
            cell["id"] = f"cell-{i}"
        text = nbformat.writes(merged)
        if not out.exists() or out.read_text(encoding="utf-8") != text:  # keep mtimes: make test reads them
            out.write_text(text, encoding="utf-8")
    if missing:
        print("not in the execution cache (was the build run?):", *missing, sep="\n  ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

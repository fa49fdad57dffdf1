"""Notebooks to download and to run in the browser: the ``attn`` wheel, the downloads' setup cell, the
"Executar no navegador" button, and what the in-browser build (``tools/build_lite.py``) shares with
the site.

When an HTML build finishes, ``attn`` is built as a wheel into ``wheels/`` of the site, and every
downloadable notebook (``_sources/**/*.ipynb``) is written from the page's runnable notebook
(``notebook_markdown.py``: the prose as the page shows it, in plain Jupyter Markdown) with a first
setup cell, in Portuguese: it installs what the notebook imports and is missing (that wheel from the
site's URL, ``html_baseurl``, with NumPy and matplotlib, its dependencies; pandas and any other import
from PyPI), says what to do when the site is not reachable, and stands in for myst-nb's ``glue()``
when myst-nb is missing; otherwise it does nothing. The rendered pages never show it (the pages are
not edited; only the downloads get the cell). ``tools/build_lite.py`` takes the wheel and these downloads.

Run in the browser: an "Executar no navegador" button in every notebook page's header, next to the
download and Binder menus, opens the page's notebook in the site's own JupyterLite app (``lite/``,
built by ``tools/build_lite.py``), where it runs on Pyodide with nothing fetched from elsewhere.
Pages too heavy for the browser declare a short in-browser variant (:data:`SHORT_KEY`); their button
says so, and build_lite.py makes the variant.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ConfigError

from .identity import ROOT
from .notebook_markdown import converted_path

LITE_DIR = "lite"  # under the site's root
WHEEL_DIR = "wheels"  # under the site's root
SETUP_TAG = "attn-setup"  # marks the injected cell (tests and the in-browser build find it by this tag)
# The setup cell, in Portuguese (the student reads it first). Filled in by setup_cell(): WHEEL_URL,
# SITE_URL, REPOSITORY_URL, PACKAGES (the notebook's imports, module -> distribution) and PIP_NAMES.
SETUP_CELL = """\
# Preparação, para executar este notebook fora do repositório do curso: instala o que ele importa e
# ainda falta: o pacote do curso, `attn`, baixado do site do curso (ele traz o NumPy e o matplotlib),
# e os outros pacotes, do PyPI. Onde tudo já está instalado, não faz nada; no navegador (JupyterLite)
# tudo já vem carregado. Sem o myst-nb, o glue() (que passa números e figuras ao texto do site) só
# mostra aqui as figuras. O aviso do matplotlib "building the font cache" fica em silêncio.
import importlib
import importlib.util
import logging
import subprocess
import sys
import types

logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)

PACOTE_DO_CURSO = "WHEEL_URL"
PACOTES = PACKAGES  # módulo importado pelo notebook -> pacote que o traz
falta = [pacote for modulo, pacote in PACOTES.items() if importlib.util.find_spec(modulo) is None]
if importlib.util.find_spec("attn") is None:
    falta.append(PACOTE_DO_CURSO)
if falta and sys.platform != "emscripten":  # no navegador, o JupyterLite carrega o que as células importam
    if subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *falta]).returncode != 0:
        raise RuntimeError(
            "Não foi possível instalar " + ", ".join(falta) + ". Se o site do curso (SITE_URL) não "
            "estiver acessível, baixe o repositório do curso (REPOSITORY_URL) e, dentro da pasta "
            "dele, rode `pip install . PIP_NAMES`; depois execute este notebook de novo.")
    importlib.invalidate_caches()
if importlib.util.find_spec("myst_nb") is None:
    from IPython.display import display as _display
    sys.modules["myst_nb"] = types.ModuleType("myst_nb")
    sys.modules["myst_nb"].glue = lambda name, value, display=True: (
        _display(value) if display or hasattr(value, "savefig") else None)
"""
NOT_INSTALLED = ("attn", "myst_nb")  # the setup cell installs the one and stands in for the other


def notebook_packages(notebook: dict) -> dict[str, str]:
    """(module, distribution) of every third-party module the notebook's code cells import, but attn
    and myst-nb, by the distributions of the build's own environment (where the page ran)."""
    modules = set()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            for node in ast.walk(ast.parse("".join(cell["source"]))):
                if isinstance(node, ast.Import):
                    modules |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules.add(node.module.split(".")[0])
    modules -= {*sys.stdlib_module_names, *NOT_INSTALLED}
    distributions = importlib.metadata.packages_distributions()
    missing = sorted(m for m in modules if m not in distributions)
    if missing:
        raise ConfigError(f"no installed distribution provides {missing}: the setup cell cannot install them")
    return {m: distributions[m][0] for m in sorted(modules)}


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


def setup_cell(wheel_url: str, site_url: str, repository_url: str, packages: dict[str, str]) -> dict:
    source = SETUP_CELL
    for key, value in (("WHEEL_URL", wheel_url), ("SITE_URL", site_url), ("REPOSITORY_URL", repository_url),
                       ("PIP_NAMES", " ".join(packages.values())), ("PACKAGES", repr(packages))):
        source = source.replace(key, value)
    return {"cell_type": "code", "execution_count": None, "id": SETUP_TAG, "outputs": [],
            "metadata": {"tags": [SETUP_TAG, "remove-cell"]}, "source": source.splitlines(keepends=True)}


# The page's cell tags that fold a cell's code (and outputs) on the page: the notebook folds them too
# (JupyterLab's metadata.jupyter), so the student sees what the reader sees; the code still runs.
# remove-cell: the glue() cells and the cells that only compute what the prose quotes.
FOLDED = {"remove-cell": ("source_hidden",), "hide-input": ("source_hidden",),
          "hide-cell": ("source_hidden", "outputs_hidden")}


def fold_like_the_page(notebook: dict) -> dict:
    for cell in notebook["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        folded = {key: True for tag in tags if cell["cell_type"] == "code" for key in FOLDED.get(tag, ())}
        if folded:  # the setup cell too (tagged remove-cell): its error, if any, still shows
            cell["metadata"]["jupyter"] = {**cell["metadata"].get("jupyter", {}), **folded}
    return notebook


def add_setup_cell(notebook: dict, wheel_url: str, site_url: str, repository_url: str) -> dict:
    """Put the setup cell first (replacing an earlier copy of it)."""
    cells = [c for c in notebook["cells"] if SETUP_TAG not in c.get("metadata", {}).get("tags", [])]
    notebook["cells"] = [setup_cell(wheel_url, site_url, repository_url, notebook_packages({"cells": cells})),
                         *cells]
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
        docname = path.relative_to(outdir / "_sources").with_suffix("").as_posix()
        converted = converted_path(app, docname)  # the page's prose as Jupyter Markdown
        if not converted.is_file():
            raise ConfigError(f"{docname}: no runnable notebook in {converted} (notebook_markdown.py)")
        notebook = json.loads(converted.read_text(encoding="utf-8"))
        fold_like_the_page(add_setup_cell(notebook, wheel_url, app.config.html_baseurl,
                                          app.config.html_theme_options["repository_url"]))
        text = json.dumps(notebook, ensure_ascii=False, indent=1) + "\n"
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


# A page too heavy for the browser declares its short in-browser variant itself, in its front matter:
# the field SHORT_KEY maps lines of its code cells to their text in the variant (build_lite.py makes the
# edits, and fails on a line no cell has, or more than one). Front matter, not cell metadata: the
# execution cache hashes the cells' metadata, not the page's, so tuning the variant re-runs nothing.
SHORT_KEY = "navegador"


def short_variant_edits(notebook: dict) -> dict[str, str]:
    """A notebook's short-variant edits, ``{line of a code cell: its text in the variant}`` ({}: none)."""
    return dict(notebook.get("metadata", {}).get(SHORT_KEY) or {})


RUN_LABEL = "Executar no navegador"
RUN_TOOLTIP = "Abrir este notebook no JupyterLite do site e executá-lo no navegador (Python via Pyodide)"
RUN_SHORT_SUFFIX = " (versão curta)"
RUN_SHORT_TOOLTIP = ("O treinamento desta página é pesado demais para o navegador: abre uma versão curta "
                     "(menos passos), cujos números diferem dos da página")


def _run_in_browser_button(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html" or "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    url = context["pathto"](f"{LITE_DIR}/notebooks/index.html", 1) + f"?path={pagename}.ipynb"
    short = SHORT_KEY in app.env.metadata[pagename]  # the page's front matter
    button = {"type": "link", "text": RUN_LABEL + (RUN_SHORT_SUFFIX if short else ""),
              "tooltip": RUN_SHORT_TOOLTIP if short else RUN_TOOLTIP, "icon": "fa-solid fa-play",
              "url": url, "label": "run-in-browser"}
    buttons = context.setdefault("header_buttons", [])
    groups = [i for i, b in enumerate(buttons) if b.get("label") == "launch-buttons"]
    buttons.insert(groups[0] if groups else len(buttons), button)


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", _run_in_browser_button, priority=510)  # after the theme's buttons
    app.connect("build-finished", _runnable_downloads)

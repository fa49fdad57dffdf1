"""Notebooks to download and to run in the browser: the ``attn`` wheel, the downloads' setup cell, the
"Executar no navegador" button, and what the in-browser build (``tools/build_lite.py``) shares with
the site.

When an HTML build finishes, ``attn`` is built as a wheel into ``wheels/`` of the site, and every
downloadable notebook (``_sources/**/*.ipynb``) is written from the page's runnable notebook
(``notebook_markdown.py``: the prose as the page shows it, in plain Jupyter Markdown) with a first
setup cell: it installs that wheel from
the site's URL (``html_baseurl``) when ``attn`` is missing and stands in for myst-nb's ``glue()``
when myst-nb is missing; otherwise it does nothing. The rendered pages never show it (the pages are
not edited; only the downloads get the cell). ``tools/build_lite.py`` takes the wheel and these downloads.

Run in the browser: an "Executar no navegador" button in every notebook page's header, next to the
download and Binder menus, opens the page's notebook in the site's own JupyterLite app (``lite/``,
built by ``tools/build_lite.py``), where it runs on Pyodide with nothing fetched from elsewhere.
Pages with a short in-browser variant (:data:`HEAVY`: too heavy for the browser) say so on the
button, and build_lite.py edits them.
"""

from __future__ import annotations

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
SETUP_CELL = """\
# Setup, for running this notebook outside the course repository: installs the course package
# `attn` from the course site if it is missing; if myst-nb is missing, stands in for its glue()
# (which hands numbers and figures to the site's text) by showing the glued figures here.
# Where both are installed it does nothing. Matplotlib's one-off note "building the font cache"
# (every run in the browser builds it) is silenced.
import importlib
import importlib.util
import logging
import subprocess
import sys
import types

logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)

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
        docname = path.relative_to(outdir / "_sources").with_suffix("").as_posix()
        converted = converted_path(app, docname)  # the page's prose as Jupyter Markdown
        if not converted.is_file():
            raise ConfigError(f"{docname}: no runnable notebook in {converted} (notebook_markdown.py)")
        notebook = json.loads(converted.read_text(encoding="utf-8"))
        text = json.dumps(add_setup_cell(notebook, wheel_url), ensure_ascii=False, indent=1) + "\n"
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


# Pages whose cells are too heavy for the browser: (source pattern, replacement) edits that make the
# in-browser copy a short variant. A pattern that no longer matches fails the build.
# The import makes the kernel load tqdm (pyodide-kernel loads what a cell imports) for the progress line.
PROGRESS_IMPORT = "import tqdm  # a linha de progresso do treinamento"
HEAVY = {
    "book/aula510/ex3_copia_gru": [
        (r"^cfg = CopyConfig\(\)$",
         "cfg = CopyConfig(steps=20, batch_size=32, eval_per_length=10, eval_every=10, "
         "eval_mid_per_length=10)  "
         "# versão curta para o navegador (o site usa CopyConfig())"),
        # no processes in the browser; a text line (tqdm, loaded by the import) shows each model's progress
        (r"^resultados = run_both\(cfg\)$",
         f"{PROGRESS_IMPORT}\nresultados = run_both(cfg, parallel=False, progress=True)"),
    ],
    "book/alem/transformer_treinado": [  # the page's own switch: a quarter of the steps, one seed
        (r"^RAPIDO = False  .*$",
         "RAPIDO = True  # versão curta para o navegador (o site usa RAPIDO = False)"),
        (r"^resultados, parede = run_many\(\[cfgs\[k\] for k in ordem\]\)$",
         f"{PROGRESS_IMPORT}\n"
         "resultados, parede = run_many([cfgs[k] for k in ordem], parallel=False, progress=True)"),
    ],
    "book/alem/transformer_copia": [  # comments in Portuguese: the reader sees them in the notebook
        (r"^SEMENTES = \(0, 1, 2\)$", "SEMENTES = (0,)  # versão curta (no site: (0, 1, 2))"),
        (r"^base = TransformerCopyConfig\(\)$",
         "base = TransformerCopyConfig(steps=30, eval_every=15, data=replace(TransformerCopyConfig().data, "
         "batch_size=32, eval_per_length=20, eval_mid_per_length=10))  "
         "# versão curta (no site: TransformerCopyConfig())"),
        (r"^L_CURTO, PASSOS_CURTO, PASSOS_GRU_CURTO = 20, 250, 600$",
         "L_CURTO, PASSOS_CURTO, PASSOS_GRU_CURTO = 20, 20, 30  # versão curta (no site: 20, 250, 600)"),
        (r"^N_CRONO, L_CRONO = 100, 80$", "N_CRONO, L_CRONO = 10, 40  # versão curta (no site: 100, 80)"),
        # one job after the other, each with its progress line (tqdm, loaded by the import)
        (r"^resultados, parede = run_many\(trabalhos.values\(\)\)$",
         f"{PROGRESS_IMPORT}\n"
         "resultados, parede = run_many(trabalhos.values(), parallel=False, progress=True)"),
        (r"^N_MAPA, L_MAPA, N_ABL = 200, 40, 100$",
         "N_MAPA, L_MAPA, N_ABL = 20, 40, 10  # versão curta (no site: 200, 40, 100)"),
    ],
}


RUN_LABEL = "Executar no navegador"
RUN_TOOLTIP = "Abrir este notebook no JupyterLite do site e executá-lo no navegador (Python via Pyodide)"
RUN_SHORT_SUFFIX = " (versão curta)"
RUN_SHORT_TOOLTIP = ("O treinamento desta página é pesado demais para o navegador: abre uma versão curta "
                     "(menos passos), cujos números diferem dos da página")


def _run_in_browser_button(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html" or "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    url = context["pathto"](f"{LITE_DIR}/notebooks/index.html", 1) + f"?path={pagename}.ipynb"
    short = pagename in HEAVY
    button = {"type": "link", "text": RUN_LABEL + (RUN_SHORT_SUFFIX if short else ""),
              "tooltip": RUN_SHORT_TOOLTIP if short else RUN_TOOLTIP, "icon": "fa-solid fa-play",
              "url": url, "label": "run-in-browser"}
    buttons = context.setdefault("header_buttons", [])
    groups = [i for i, b in enumerate(buttons) if b.get("label") == "launch-buttons"]
    buttons.insert(groups[0] if groups else len(buttons), button)


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", _run_in_browser_button, priority=510)  # after the theme's buttons
    app.connect("build-finished", _runnable_downloads)

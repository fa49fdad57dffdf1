"""The in-browser notebooks (JupyterLite + Pyodide under ``_build/html/lite/``) in headless Chromium.

Activity 4, Exercise 1 is opened the way a reader opens it: the page's "Executar no navegador"
button, then every cell is run in the browser. The weights table must hold the exercise's values,
a figure must come out, no cell may fail, and no request may leave the local server (the site
serves Pyodide, its packages and attn itself). Each training page (HEAVY) is then run, cold, to its
last cell in its short variant: no error output, no warning, every training job's progress line at
its last step. The times (to the kernel, the first result and the last cell; Ex 1 cold and then
warm, the browser's cache filled as GitHub Pages allows with ``max-age=600``) go to
``_build/screenshots/lite_report.json`` and are printed; tests never assert on time. Each run is kept
between test runs on what it was served (below, "each run kept on its own"): an edit of one page
makes that page's run again, at most.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
import test_site
from test_site import (
    CHROMIUM,
    CHROMIUM_ARGS,
    HTML_DIR,
    PREFIX,
    ROOT,
    SHOT_DIR,
    PagesHandler,
    _served_file,
    keep_result,
    kept_result,
    visits_context,
)

sys.path.insert(0, str(ROOT / "tools"))  # the build helpers are not a package
from build_lite import (  # noqa: E402
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
from export_executed import toc_pages  # noqa: E402
from myst_nb.core.read import read_myst_markdown_notebook  # noqa: E402
from sphinx_site.downloads import short_variant_edits  # noqa: E402

# The pages that declare a short in-browser variant (tools/sphinx_site/downloads.py, SHORT_KEY), with
# their edits {line: text in the variant}, read from the pages themselves.
HEAVY = {page.relative_to(ROOT).with_suffix("").as_posix(): edits for page in toc_pages()
         if (edits := short_variant_edits(read_myst_markdown_notebook(page.read_text(encoding="utf-8"))))}

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
EXPECTED_WEIGHTS = ("0.5065", "0.1863", "0.3072")  # the weights table (the site shows the same)
RUN_ALL_TIMEOUT_MS = 600_000

# Read the open notebook's cells from the JupyterLite app (exposeAppInBrowser in jupyter-lite.json).
CELLS_JS = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.content.model || !panel.sessionContext) { return null; }
  const cells = [];
  const model = panel.content.model;
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    if (cell.type !== 'code') { continue; }
    cells.push({count: cell.executionCount, outputs: cell.outputs.toJSON()});
  }
  return {kernel: panel.sessionContext.session && panel.sessionContext.session.kernel
                  ? panel.sessionContext.session.kernel.name : null,
          busy: panel.sessionContext.kernelDisplayStatus, cells};
}"""


class CachingPagesHandler(PagesHandler):
    """The test site's GitHub Pages server, with GitHub Pages' cache header (for the warm run)."""

    def end_headers(self):
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()


def _cells(page):
    return page.evaluate(CELLS_JS)


def _run_all(page, url: str) -> dict:
    """Open the notebook, run every cell; return the cells and the times (s) to the kernel being ready,
    to the first result and to the last cell done."""
    start = time.monotonic()
    page.goto(url, wait_until="load")
    page.wait_for_function("() => !!(window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.isReady"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel)", timeout=120_000)
    kernel = time.monotonic() - start
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")  # no await
    first = None
    deadline = time.monotonic() + RUN_ALL_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        state = _cells(page)
        if state and state["cells"]:
            done = [c["count"] is not None for c in state["cells"]]
            if first is None and done[0] and state["cells"][0]["count"] is not None and any(
                    c["outputs"] for c in state["cells"] if c["count"] is not None):
                first = time.monotonic() - start
            errors = [o for c in state["cells"] for o in c["outputs"] if o["output_type"] == "error"]
            if errors or (all(done) and state["busy"] == "idle"):
                return {"cells": state["cells"], "kernel": kernel, "first": first,
                        "last": time.monotonic() - start, "errors": errors}
        time.sleep(0.5)
    pytest.fail(f"the notebook did not finish in {RUN_ALL_TIMEOUT_MS / 1000:.0f} s: {_cells(page)}")


# attachment:<name> is a Markdown cell's own attachment (the notebooks' glued figures, written by
# tools/sphinx_site/notebook_markdown.py). JupyterLab renders the cell's HTML first, so the browser
# tries the raw URL once (ERR_UNKNOWN_URL_SCHEME: no host is asked), then swaps in the attachment.
ATTACHMENT = "attachment:"


# Each run kept on its own (tests/test_site.py, "visits kept between runs"): Ex 1 (the
# cold run and the warm one, which needs the cold run's cache), then each training page's short
# variant. A run is made again only when a file it was served, the in-browser app (_app_files) or
# this code changed, so an edit of one page re-runs that page's run at most (tools/build_lite.py
# leaves every other page's files byte-identical).
EX1 = "ex1"


def _run_name(run: str) -> str:
    return f"in-browser run {run}"


@pytest.fixture(scope="module")
def lite_run():  # used by the browser tests only (marked "site")
    if not (HTML_DIR / "lite" / "notebooks" / "index.html").is_file():
        pytest.fail(f"no in-browser build in {HTML_DIR / 'lite'}: run `make book`")
    server = ThreadingHTTPServer(("127.0.0.1", 0), CachingPagesHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    context = visits_context(Path(__file__), Path(test_site.__file__))
    try:
        runs = {run: kept_result(_run_name(run), context, base) for run in (EX1, *HEAVY)}
        todo = [run for run, kept in runs.items() if kept is None]
        print(f"\nin-browser runs: {len(todo)} to make ({', '.join(todo) or 'none'}), "
              f"{len(runs) - len(todo)} kept")
        if todo:
            app = _app_files()
            for run, result in _run_in_browser(base, todo).items():
                opened = f"{LITE_DIR}/files/{Path(PAGE if run == EX1 else run).with_suffix('.ipynb')}"
                keep_result(_run_name(run), context, base, [*result["served"], *app, opened], result)
                runs[run] = result
    finally:
        server.shutdown()
        server.server_close()
    ex1 = runs[EX1]
    result = {"label": ex1["label"], "lite_url": ex1["lite_url"], "cold": ex1["cold"], "warm": ex1["warm"],
              "training": {rel: runs[rel]["run"] for rel in HEAVY},
              "training_urls": {rel: runs[rel]["url"] for rel in HEAVY}, "base": base,
              "served_by_run": {run: runs[run]["served"] for run in runs},
              **{key: [item for run in runs.values() for item in run[key]]
                 for key in ("foreign", "failed", "console_errors", "served")}}
    report = {"page": PAGE, "lite_url": result["lite_url"], **_times("cold", result["cold"]),
              **_times("warm", result["warm"]),
              "training_pages": {page: _times("cold", run) for page, run in result["training"].items()}}
    SHOT_DIR.mkdir(parents=True, exist_ok=True)
    (SHOT_DIR / "lite_report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print("in-browser run:", json.dumps(report))
    return result


def _run_page(run: str) -> str:
    """The page a run opens, without its suffix (book/<...>/<page>)."""
    return Path(PAGE).with_suffix("").as_posix() if run == EX1 else run


def _other_pages(run: str, served) -> list[str]:
    """The files of another page than the run's own among those it was served (its kept result
    would then be made again after an edit of that page)."""
    own = _run_page(run)
    return sorted({f for f in served if (f.startswith("book/") and f != f"{own}.html")
                   or (f.startswith(f"{LITE_DIR}/files/") and f != f"{LITE_DIR}/files/{own}.ipynb")
                   or f.startswith("_sources/")})


def _app_files() -> list[str]:
    """The in-browser app's files, but for the notebooks (and their listings) a run does not open."""
    return [p.relative_to(HTML_DIR).as_posix() for p in (HTML_DIR / LITE_DIR).rglob("*")
            if p.is_file() and p.suffix != ".ipynb" and "api" not in p.relative_to(HTML_DIR / LITE_DIR).parts[:1]]


def _run_in_browser(base: str, runs: list[str]) -> dict[str, dict]:
    """Make each of ``runs`` (EX1, a training page of HEAVY) in one browser, each in fresh contexts
    (an empty browser cache); each run's result with what it was served and what went wrong."""
    from playwright.sync_api import sync_playwright

    results = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            origin = base[: -len(PREFIX)] + "/"
            for run in runs:
                record = results[run] = {"foreign": [], "failed": [], "console_errors": [], "served": []}

                def on_request(req, record=record):
                    # Same origin, not only the project path: JupyterLite's service worker pings
                    # <origin>/api/service-worker-heartbeat (a harmless 404 on GitHub Pages too).
                    if not req.url.startswith((origin, "data:", "blob:", "about:", ATTACHMENT)):
                        record["foreign"].append(req.url)
                    elif (file := _served_file(req.url)) is not None:
                        record["served"].append(file)

                context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="pt-BR")
                context.on("request", on_request)
                context.on("requestfailed", lambda r, record=record: r.url.startswith(ATTACHMENT)
                           or record["failed"].append(f"{r.url} ({r.failure})"))
                context.on("console", lambda m, record=record: m.type == "error"
                           and record["console_errors"].append(m.text))
                page = context.new_page()
                if run == EX1:  # cold, then warm in the same context (its cache filled by the cold run)
                    record["label"], record["lite_url"] = _button(page, base + PAGE)
                    record["cold"] = _run_all(page, record["lite_url"])
                    page.screenshot(path=str(SHOT_DIR / "lite__atividade4__ex1.png"), full_page=False)
                    page.close()
                    warm_page = context.new_page()
                    record["warm"] = _run_all(warm_page, record["lite_url"])
                    warm_page.close()
                else:  # a training page's short variant, cold
                    _, record["url"] = _button(page, f"{base}{run}.html")
                    record["run"] = _run_all(page, record["url"])
                    page.screenshot(path=str(SHOT_DIR / f"lite__{run.removeprefix('book/').replace('/', '__')}.png"),
                                    full_page=False)
                context.close()
        finally:
            browser.close()
    return results


def _button(page, url: str) -> tuple[str, str]:
    """Open a site page; the label and absolute URL of its "Executar no navegador" button."""
    page.goto(url, wait_until="load")
    button = page.locator("a.btn-run-in-browser")
    href = button.get_attribute("href")
    return button.inner_text().strip(), page.evaluate("(h) => new URL(h, document.baseURI).href", href)


def _error_text(error: dict) -> str:
    """An error output as the reader sees it: the traceback, without the terminal colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.get("traceback") or
                                                  [f"{error.get('ename')}: {error.get('evalue')}"]))


def _times(prefix: str, run: dict) -> dict:
    return {f"{prefix}_kernel_ready_s": round(run["kernel"], 1), f"{prefix}_first_result_s": round(run["first"] or -1, 1),
            f"{prefix}_all_cells_s": round(run["last"], 1)}


def _text(cells) -> str:
    parts = []
    for cell in cells:
        for out in cell["outputs"]:
            parts.append(out.get("text", "") if isinstance(out.get("text", ""), str) else "".join(out["text"]))
            data = out.get("data", {})
            for mime in ("text/plain", "text/html"):
                value = data.get(mime, "")
                parts.append(value if isinstance(value, str) else "".join(value))
    return "\n".join(parts)


@pytest.mark.site
def test_the_page_button_opens_the_notebook_in_the_sites_own_app(lite_run):
    assert lite_run["label"] == "Executar no navegador"
    assert lite_run["lite_url"].startswith(lite_run["base"] + "lite/notebooks/")
    assert "path=book/atividade4/ex1_atencao_produto_escalar.ipynb" in lite_run["lite_url"]


@pytest.mark.site
@pytest.mark.parametrize("run", ["cold", "warm"])
def test_every_cell_runs_in_the_browser_with_the_exercise_values(lite_run, run):
    result = lite_run[run]
    assert not result["errors"], result["errors"]
    text = _text(result["cells"])
    rows = [line.split() for line in text.splitlines() if line.startswith("consulta ")]
    assert ["consulta", "1", *EXPECTED_WEIGHTS] in rows, rows
    assert any("image/png" in out.get("data", {}) for c in result["cells"] for out in c["outputs"]), "no figure"


def _streams(cells, name=None) -> list[str]:
    return ["".join(o["text"]) if isinstance(o["text"], list) else o["text"]
            for c in cells for o in c["outputs"] if o["output_type"] == "stream" and name in (None, o["name"])]


def test_every_training_page_has_its_expected_progress_lines():
    assert set(TRAINING_PROGRESS) == set(HEAVY)


@pytest.mark.site
@pytest.mark.parametrize("rel", sorted(TRAINING_PROGRESS))
def test_a_training_page_short_variant_runs_to_its_last_cell_showing_progress(lite_run, rel):
    result = lite_run["training"][rel]
    assert f"path={rel}.ipynb" in lite_run["training_urls"][rel]
    assert not result["errors"], "\n".join(_error_text(e) for e in result["errors"])
    assert result["cells"] and all(c["count"] is not None for c in result["cells"]), "a cell did not run"
    stderr = _streams(result["cells"], "stderr")
    assert not [t for t in stderr if "Warning" in t], stderr  # tqdm writes its lines to stderr too
    streams = _streams(result["cells"])
    # each training job's progress line (tqdm) reached its last step; a label starts its line
    for label, steps in TRAINING_PROGRESS[rel]:
        pattern = rf"(?:^|[\r\n]){re.escape(label)}: 100%[^\r\n]*\b{steps}/{steps}\b"
        assert any(re.search(pattern, text) for text in streams), (label, steps, streams)
    assert any("image/png" in out.get("data", {}) for c in result["cells"] for out in c["outputs"]), "no figure"


@pytest.mark.site
@pytest.mark.parametrize("run", [EX1, *HEAVY])
def test_each_in_browser_run_is_served_its_own_page_only(lite_run, run):
    """What keeps a run local: it is kept on what it was served, which no other page's edit changes."""
    served = lite_run["served_by_run"][run]
    assert f"{_run_page(run)}.html" in served and f"{LITE_DIR}/files/{_run_page(run)}.ipynb" in served
    assert not _other_pages(run, served)


def test_a_run_served_another_pages_files_is_noticed():
    ex1 = [f"{Path(PAGE).with_suffix('').as_posix()}.html", f"{LITE_DIR}/files/{Path(PAGE).with_suffix('.ipynb')}"]
    other = ["book/alem/transformer_treinado.html", f"{LITE_DIR}/files/book/alem/transformer_treinado.ipynb",
             "_sources/book/alem/transformer_treinado.ipynb"]
    assert _other_pages(EX1, [*ex1, f"{LITE_DIR}/api/contents/book/all.json", "_static/x.css"]) == []
    assert _other_pages(EX1, [*ex1, *other]) == sorted(other)
    assert _other_pages("book/alem/transformer_treinado", ex1) == sorted(ex1)


@pytest.mark.site
def test_no_request_leaves_the_local_server(lite_run):
    assert not lite_run["foreign"], lite_run["foreign"]
    assert not lite_run["failed"], lite_run["failed"]


LITE = HTML_DIR / LITE_DIR


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
    server = ThreadingHTTPServer(("127.0.0.1", 0), PagesHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900}, locale="pt-BR")
                _, url = _button(page, base + PAGE)
                page.goto(url, wait_until="load")
                page.wait_for_function(f"() => {{ const s = ({OPENED_JS})(); return s && s.checkpoint; }}",
                                       timeout=120_000)
                seen = page.evaluate(OPENED_JS)
                page.screenshot(path=str(SHOT_DIR / "lite__ex1_opened.png"), full_page=False)
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
    assert "years" not in seen["checkpoint"] and "anos" not in seen["checkpoint"], seen["checkpoint"]
    assert seen["last_modified"] == page_times([Path(PAGE).with_suffix("").as_posix()])[
        Path(PAGE).with_suffix("").as_posix()], seen["last_modified"]
    assert seen["first_code"].startswith("# Preparação"), seen["first_code"][:200]
    assert seen["folded"] == should_fold, seen["folded"]

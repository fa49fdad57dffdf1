"""What several test modules (and bench/lite.py) share; on the import path through pyproject.toml's
``[tool.pytest.ini_options] pythonpath``.

* the built site served as GitHub Pages serves it, and headless Chromium (Debian's ``chromium``);
* an in-browser notebook (the site's JupyterLite) opened from a page's button and run to its end;
* the glue values of an executed notebook and the text a glue role puts in the prose;
* the ``literalinclude`` listings of a page and the functions they show;
* finite differences, PyTorch tensors and layers on attn's weights, a random encoder-decoder.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import gzip
import json
import mimetypes
import os
import re
import threading
import time
from ast import literal_eval
from contextlib import asynccontextmanager, contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import numpy as np
import pytest
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

ROOT = Path(__file__).resolve().parent.parent
EXECUTED = ROOT / "_build" / "jupyter_execute"
# A notebook cell's limit wherever a test runs one: the build's, _config.yml's execute.timeout (a hang guard).
CELL_TIMEOUT_S = int(re.search(r"^  timeout: *(\d+)", (ROOT / "_config.yml").read_text(encoding="utf-8"), re.M)[1])

# --------------------------------------------------------------------------- the site, served

HTML_DIR = Path(os.environ.get("SITE_HTML_DIR", ROOT / "_build" / "html")).resolve()
SHOT_DIR = HTML_DIR.parent / "screenshots"
IDENTITY_FILE = HTML_DIR.parent / "site-identity.json"
IDENTITY = json.loads(IDENTITY_FILE.read_text(encoding="utf-8")) if IDENTITY_FILE.is_file() else {}
BASEURL = IDENTITY.get("site_url", "/")
PREFIX = urlsplit(BASEURL).path  # "/<repository>/"
GZIP_TYPES = ("text/", "application/javascript", "application/json", "image/svg+xml", "application/xml")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",  # containers (the GitHub test job) give /dev/shm only 64 MB
    # Belt and braces: no name other than the local server resolves (requests are still recorded).
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


class PagesHandler(SimpleHTTPRequestHandler):
    """Serve ``HTML_DIR`` under ``PREFIX`` the way GitHub Pages does (404.html, gzip)."""

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _resolve(self) -> Path | None:
        path = unquote(urlsplit(self.path).path)
        if not path.startswith(PREFIX):
            return None
        target = (HTML_DIR / path[len(PREFIX):]).resolve()
        if HTML_DIR not in target.parents and target != HTML_DIR:
            return None
        if target.is_dir():
            target = target / "index.html"
        return target if target.is_file() else None

    def do_GET(self):  # noqa: N802 (http.server API)
        target = self._resolve()
        status = 200
        if target is None:
            status, target = 404, HTML_DIR / "404.html"
        body = target.read_bytes()
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        self.send_response(status)
        self.send_header("Content-Type", ctype + ("; charset=utf-8" if ctype.startswith("text/") else ""))
        if ctype.startswith(GZIP_TYPES) and "gzip" in self.headers.get("Accept-Encoding", ""):
            body = _gzip(target)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@functools.lru_cache(maxsize=None)
def _gzip(path: Path) -> bytes:
    return gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)


@contextmanager
def serve_site(handler=PagesHandler):
    """The built site on a free local port, as GitHub Pages serves it; yields its base URL
    (``http://127.0.0.1:<port>/<repository>/``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    finally:
        server.shutdown()
        server.server_close()


def launch_chromium(pw):
    """Debian's headless Chromium through Playwright ``pw`` (its sync or its async API)."""
    return pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


async def full_page_shot(page, path: Path, **options) -> bool:
    """A full-page screenshot of ``page`` (async API) into ``path``, for a reviewer's eyes: no test reads
    it, so one that times out is dropped (False) instead of failing the checks already made. (In a fresh
    clone's .ci/run, one full-page shot of about 125 hung past 180 s; the next run took them all.)"""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        await page.screenshot(path=str(path), full_page=True, timeout=180_000, **options)
        return True
    except PlaywrightTimeout:
        path.unlink(missing_ok=True)  # no stale picture in its place
        return False



class BrowserPool:
    """Up to ``size`` Chromium processes, each launched when a visit first needs it (none when every
    visit's result is kept); ``async with pool.lease() as browser`` lends one to a single visit."""

    def __init__(self, pw, size: int):
        self.pw, self.size, self.launched, self.browsers, self.free = pw, size, 0, [], asyncio.Queue()

    @asynccontextmanager
    async def lease(self):
        if self.free.empty() and self.launched < self.size:
            self.launched += 1
            browser = await launch_chromium(self.pw)
            self.browsers.append(browser)
        else:
            browser = await self.free.get()
        try:
            yield browser
        finally:
            self.free.put_nowait(browser)

    async def close(self):
        await asyncio.gather(*(b.close() for b in self.browsers))



# --------------------------------------------------------------------------- an in-browser notebook run

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


def run_all(page, url: str) -> dict:
    """Open the notebook, run every cell; return the cells and the times (s) to the kernel being ready,
    to the first result and to the last cell done."""
    start = time.monotonic()
    page.goto(url, wait_until="load", timeout=120_000)  # the app's bundles: seconds, more under load
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


def button(page, url: str) -> tuple[str, str]:
    """Open a site page; the label and absolute URL of its "Executar no navegador" button."""
    page.goto(url, wait_until="load")
    button = page.locator("a.btn-run-in-browser")
    href = button.get_attribute("href")
    return button.inner_text().strip(), page.evaluate("(h) => new URL(h, document.baseURI).href", href)


def error_text(error: dict) -> str:
    """An error output as the reader sees it: the traceback, without the terminal colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.get("traceback") or
                                                  [f"{error.get('ename')}: {error.get('evalue')}"]))


def output_text(cells) -> str:
    parts = []
    for cell in cells:
        for out in cell["outputs"]:
            parts.append(out.get("text", "") if isinstance(out.get("text", ""), str) else "".join(out["text"]))
            data = out.get("data", {})
            for mime in ("text/plain", "text/html"):
                value = data.get(mime, "")
                parts.append(value if isinstance(value, str) else "".join(value))
    return "\n".join(parts)



# --------------------------------------------------------------------------- glue values

GLUE_ROLES = {"glue", "glue:", "glue:any", "glue:text", "glue:md"}
# Directives whose body is code or math, not prose.
NOT_PROSE = {"code", "code-block", "sourcecode", "literalinclude", "code-cell", "math", "raw", "glue:math",
             "mermaid", "graphviz"}
_MD = create_md_parser(MdParserConfig(enable_extensions={"dollarmath", "amsmath", "colon_fence", "deflist",
                                                         "substitution"}), RendererHTML)
_DIRECTIVE = re.compile(r"^\{([^}]+)\}\s*(.*)$")
_OPTION = re.compile(r"^:[\w-]+:")


def glue_roles(markdown: str) -> list[tuple[str, str]]:
    """(role name, role content) of every glue role in the prose of ``markdown`` (math and code skipped)."""
    found = []
    for token in _MD.parse(markdown):
        if token.type in ("fence", "colon_fence"):
            match = _DIRECTIVE.match(token.info.strip())
            if match and match.group(1).strip() not in NOT_PROSE:
                lines = token.content.splitlines()
                if lines and lines[0].strip() == "---":  # YAML options block
                    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
                    lines = lines[end + 1:]
                while lines and _OPTION.match(lines[0]):
                    lines = lines[1:]
                found += glue_roles(match.group(2) + "\n\n" + "\n".join(lines))
        for child in token.children or []:
            if child.type == "myst_role" and child.meta.get("name") in GLUE_ROLES:
                found.append((child.meta["name"], child.content))
    return found


def glued_values(outputs) -> dict[str, dict]:
    """Glue key -> the glued MIME bundle, from glue outputs (display_data with scrapbook metadata)."""
    values = {}
    for output in outputs:
        scrapbook = output.get("metadata", {}).get("scrapbook")
        if scrapbook:
            prefix = scrapbook.get("mime_prefix", "")
            values[scrapbook["name"]] = {k.removeprefix(prefix): v for k, v in output["data"].items()}
    return values


def page_glue_values(executed: Path) -> dict[str, dict]:
    """The glue values of one page: the executed notebook's glue outputs (what tools/export_executed.py
    writes) and, when myst-nb executed the page itself, its ``.glue.json`` sidecar (it strips the
    outputs from the notebook it writes)."""
    nb = nbformat.read(executed, as_version=4)
    values = glued_values(o for c in nb.cells for o in c.get("outputs", []))
    sidecar = executed.with_suffix(".glue.json")
    if sidecar.exists():
        values.update(glued_values(json.loads(sidecar.read_text(encoding="utf-8")).values()))
    return values


def rendered_glue(role: str, content: str, values: dict[str, dict]) -> tuple[str, bool] | None:
    """The text a glue role puts in the page, and whether the glued object was a string (as myst-nb)."""
    key, fmt = content, "s"  # myst-nb's default for {glue:text}
    if role == "glue:text" and ":" in content:
        key, fmt = content.rsplit(":", 1)
    bundle = values.get(key)
    if bundle is None or "text/plain" not in bundle or any(m.startswith("image/") for m in bundle):
        return None
    text = bundle["text/plain"]
    try:
        value = literal_eval(text)  # what myst-nb does: a glued string loses its quotes
    except (SyntaxError, ValueError):
        value = text  # e.g. "np.float64(0.5)": shown as is
    is_str = isinstance(value, str) and value != text
    if role != "glue:text":
        return text, is_str  # {glue} pastes text/plain as it is: a string keeps its quotes
    kind = fmt[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, fmt), is_str


# --------------------------------------------------------------------------- literalinclude listings

LITERALINCLUDE = re.compile(r"^```\{literalinclude\}\s+(?P<path>\S+)\n(?P<options>(?::[^\n]*\n)*)```", re.M)


def literalincludes(text: str) -> list[dict]:
    """{path, pyobject, options, label} of every literalinclude of the page, in order."""
    found = []
    for m in LITERALINCLUDE.finditer(text):
        options = dict(re.findall(r"^:([\w-]+):\s*(.*)$", m.group("options"), re.M))
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        label = re.fullmatch(r"\(([\w-]+)\)=", before)
        found.append({"path": m.group("path"), "pyobject": options.get("pyobject"), "options": options,
                      "label": label.group(1) if label else None})
    return found


def includes(text: str) -> dict[str, dict]:
    """pyobject -> {path, pyobject, options, label} for every literalinclude of the page."""
    return {inc["pyobject"]: inc for inc in literalincludes(text)}


def function_node(source_file: str, pyobject: str):
    tree = ast.parse((ROOT / source_file).read_text(encoding="utf-8"))
    node = tree
    for part in pyobject.split("."):
        node = next(n for n in node.body if getattr(n, "name", None) == part)
    return node


def docstring_node(node):
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


# --------------------------------------------------------------------------- gradients and oracles

STEP, TOL = 1e-6, 1e-6


def numeric_grad(f, x):
    """Central differences of the scalar f() with respect to every entry of the array x (changed in place)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + STEP
        up = f()
        x[i] = old - STEP
        down = f()
        x[i] = old
        g[i] = (up - down) / (2 * STEP)
    return g


def assert_close_grad(num, ana, name):
    err = np.linalg.norm(num - ana) / max(np.linalg.norm(num) + np.linalg.norm(ana), 1e-300)
    assert err < TOL, f"{name}: relative error {err:.2e}"


def probe(shape, seed):
    """A fixed random direction: the scalar loss sum(probe * output) has gradient probe."""
    return np.random.default_rng(seed).normal(size=shape)


def t(a):
    import torch

    return torch.from_numpy(np.ascontiguousarray(a)).requires_grad_(True)


def torch_layer(mha, p):
    import torch

    d, h = mha.d_model, mha.num_heads
    layer = torch.nn.TransformerEncoderLayer(d, h, dim_feedforward=p["W1"].shape[1], dropout=0.0,
                                             activation="relu", batch_first=True, norm_first=False,
                                             dtype=torch.float64)
    packed = np.concatenate([W.transpose(0, 2, 1).reshape(d, d) for W in (mha.W_q, mha.W_k, mha.W_v)])
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.from_numpy(packed))
        layer.self_attn.in_proj_bias.zero_()  # attn's MHA has no biases
        layer.self_attn.out_proj.weight.copy_(torch.from_numpy(mha.W_o.T.copy()))
        layer.self_attn.out_proj.bias.zero_()
        layer.linear1.weight.copy_(torch.from_numpy(p["W1"].T.copy()))
        layer.linear1.bias.copy_(torch.from_numpy(p["b1"]))
        layer.linear2.weight.copy_(torch.from_numpy(p["W2"].T.copy()))
        layer.linear2.bias.copy_(torch.from_numpy(p["b2"]))
        for norm, i in ((layer.norm1, 1), (layer.norm2, 2)):
            norm.weight.copy_(torch.from_numpy(p[f"gamma{i}"]))
            norm.bias.copy_(torch.from_numpy(p[f"beta{i}"]))
    return layer


def random_model(d_model, num_heads, num_layers, seed, V=9, max_len=24):
    """A float64 encoder-decoder whose biases and norms are moved away from 0 and 1."""
    from attn.training.transformer import EncoderDecoder

    model = EncoderDecoder(V, d_model=d_model, num_heads=num_heads, d_ff=2 * d_model, num_layers=num_layers,
                           max_len=max_len, seed=seed, dtype=np.float64)
    rng = np.random.default_rng(seed + 1000)
    for k, v in model.params.items():
        last = k.split(".")[-1]
        if last.startswith(("b", "beta")):
            v[...] = 0.3 * rng.normal(size=v.shape)
        elif last.startswith("gamma"):
            v[...] = 1 + 0.3 * rng.normal(size=v.shape)
    return model


def block_params(rng, d, d_ff):
    p = {"W1": rng.normal(size=(d, d_ff)) / np.sqrt(d), "b1": rng.normal(size=d_ff) * 0.3,
         "W2": rng.normal(size=(d_ff, d)) / np.sqrt(d_ff), "b2": rng.normal(size=d) * 0.3}
    for i in (1, 2, 3):
        p[f"gamma{i}"], p[f"beta{i}"] = 1 + 0.3 * rng.normal(size=d), 0.3 * rng.normal(size=d)
    return p




def short_variant_pages() -> dict[str, dict[str, str]]:
    """The pages that declare a short in-browser variant (``SHORT_KEY`` in their front matter), with their
    edits ``{line of a code cell: its text in the variant}``, read from the pages themselves."""
    from export_executed import toc_pages
    from myst_nb.core.read import read_myst_markdown_notebook
    from sphinx_site.downloads import short_variant_edits

    return {page.relative_to(ROOT).with_suffix("").as_posix(): edits for page in toc_pages()
            if (edits := short_variant_edits(read_myst_markdown_notebook(page.read_text(encoding="utf-8"))))}

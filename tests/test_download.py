"""A notebook downloaded from the site runs on its own, outside this repository.

The built site's downloads (``_sources/**/*.ipynb``) start with a setup cell that installs ``attn``
from the site's wheel when it is missing (tools/sphinx_site/downloads.py). Here one download runs as a student
runs it: in a fresh virtual environment holding only what Jupyter needs to start a kernel (ipykernel,
the book's pin, and what it requires), no NumPy, no pandas, no matplotlib, no ``attn``, no myst-nb, in
a folder outside the repository, with the site served locally (the setup cell's Pages URL, the one the
build used, is pointed at the local server). The setup cell must install what the notebook imports;
the notebook must complete, and its text outputs must be the site's (the executed notebook that nbval
checks, ``_build/jupyter_execute``). With the site unreachable, the setup cell must stop with a
Portuguese message that says what to do.

The environment is made once per set of pins, as a pristine template (``_build/.download-venv-<key>/``,
the key hashing the pins, the constraints, the interpreter and this file; a fresh clone makes it on its first
run): a new virtual environment holding a copy of exactly the files that the test environment's
ipykernel, its requirements and pip installed (the same pins, with no registry round trip). Every run
gets its own copy of the template (hard links), checked to be a virtual environment of its own
(``sys.prefix``) with the pin and without any of ``BARE_ABSENT``.
The setup cell installs ``attn`` into that copy only: afterwards every file of the template must
still have its size and mtime, and a template that changed is made again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import nbformat
import pytest
import yaml
from export_executed import toc_pages
from helpers import CELL_TIMEOUT_S, serve_site
from nbconvert.preprocessors import CoalesceStreamsPreprocessor
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from sphinx_site.downloads import SETUP_TAG, WHEEL_DIR, attn_wheel_name

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
HTML_DIR = BUILD / "html"

# The Pages URL this build used (derived by tools/sphinx_site/identity.py, recorded next to the HTML directory).
IDENTITY = BUILD / "site-identity.json"
BASEURL = (json.loads(IDENTITY.read_text(encoding="utf-8"))["site_url"] if IDENTITY.is_file()
           else yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["html"]["baseurl"]).rstrip("/")
PAGE = "book/atividade4/ex1_atencao_produto_escalar"
FRESH_PACKAGES = ("ipykernel",)  # what Jupyter needs to run a notebook's kernel, and nothing else
BARE_ABSENT = ("numpy", "pandas", "matplotlib", "attn", "myst_nb")  # what the setup cell must install or stand in for



@pytest.fixture(autouse=True, scope="module")
def _built_site():
    assert (HTML_DIR / "_sources").is_dir(), f"{HTML_DIR} has no downloads: run `make book` first"


def _pins() -> list[str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            pins[line.split("==")[0].lower()] = line
    return [pins[name] for name in FRESH_PACKAGES]


def _download(page: str) -> Path:
    return HTML_DIR / "_sources" / f"{page}.ipynb"


def test_every_download_starts_with_the_setup_cell():
    wheel_url = f"{BASEURL}/{WHEEL_DIR}/{attn_wheel_name()}"
    assert (HTML_DIR / WHEEL_DIR / attn_wheel_name()).is_file()
    pages = [p.relative_to(ROOT).with_suffix("").as_posix() for p in toc_pages()]
    assert PAGE in pages
    for page in pages:
        nb = nbformat.read(_download(page), as_version=4)
        nbformat.validate(nb)
        first = nb.cells[0]
        assert SETUP_TAG in first.metadata.get("tags", []), page
        assert wheel_url in first.source, page
        assert sum(SETUP_TAG in c.metadata.get("tags", []) for c in nb.cells) == 1, page


def test_the_served_wheels_hold_every_module_of_attn():
    """The downloads and the in-browser runs import from these wheels, not from the repository."""
    import zipfile

    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "attn").rglob("*.py")}
    for wheel in (HTML_DIR / WHEEL_DIR / attn_wheel_name(), HTML_DIR / "lite" / "pyodide" / attn_wheel_name()):
        with zipfile.ZipFile(wheel) as z:
            assert {n for n in z.namelist() if n.endswith(".py")} == modules, wheel


def test_the_setup_cell_is_not_on_the_rendered_page():
    html = (HTML_DIR / f"{PAGE}.html").read_text(encoding="utf-8")
    assert attn_wheel_name() not in html and "find_spec" not in html


def _template_key() -> str:
    recipe = [sys.version, sys.base_prefix, *_pins(), (ROOT / "constraints.txt").read_text(encoding="utf-8"),
              Path(__file__).read_text(encoding="utf-8")]  # this file makes the template
    return hashlib.sha256("\n".join(recipe).encode()).hexdigest()[:16]


MANIFEST = "manifest.json"  # next to the template's venv/, written once the template is complete


def _manifest(env_dir: Path) -> dict[str, list[int]]:
    """Every file and link of an environment: its size and mtime (a changed template shows here)."""
    files = {}
    for top, _, names in os.walk(env_dir):  # does not descend into linked folders (lib64 -> lib)
        for name in names:
            stat = os.lstat(path := os.path.join(top, name))
            files[os.path.relpath(path, env_dir)] = [stat.st_size, int(stat.st_mtime)]  # what tar keeps
    return files


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link where the file system allows it (no byte is copied), else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _needed_distributions() -> dict:
    """The distributions of this environment that FRESH_PACKAGES and pip need (Requires-Dist, no extras)."""
    found, todo = {}, [*FRESH_PACKAGES, "pip"]
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        name = canonicalize_name(dist.metadata["Name"])
        if name not in found:
            found[name] = dist
            requires = [Requirement(r) for r in dist.requires or []]
            todo += [r.name for r in requires if r.marker is None or r.marker.evaluate({"extra": ""})]
    return found


def _template_dir() -> Path:
    return BUILD / f".download-venv-{_template_key()}" / "venv"


def _template() -> Path:
    """The pristine environment for these pins: made on first use, then reused while unchanged.

    A new virtual environment gets a copy of every file that this environment's FRESH_PACKAGES and
    their requirements installed into site-packages (the wheelhouse is what is installed: the same
    pins, constraints.txt); nothing else, so no attn and no myst-nb.
    """
    env_dir = _template_dir()
    home = env_dir.parent
    if (home / MANIFEST).is_file():
        if json.loads((home / MANIFEST).read_text(encoding="utf-8")) == _manifest(env_dir):
            return env_dir
    for old in BUILD.glob(".download-venv-*"):  # other pins' templates, an unfinished or a changed one
        shutil.rmtree(old)
    dists = _needed_distributions()
    for pin in _pins():
        name, version = pin.split("==")
        assert dists[canonicalize_name(name)].version == version, f"this environment does not have {pin}"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = env_dir / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    for dist in dists.values():
        for rel in dist.files:
            source, target = Path(dist.locate_file(rel)), Path(os.path.normpath(site / rel))
            if target.is_relative_to(site) and source.is_file():  # not the scripts: they name this python
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
    (home / MANIFEST).write_text(json.dumps(_manifest(env_dir)), encoding="utf-8")  # complete
    return env_dir


def _fresh_copy(base: Path) -> Path:
    """A copy of the template of its own (hard links), checked bare: the pin, none of BARE_ABSENT."""
    template = _template()  # its manifest checked
    env_dir = base / "venv"
    shutil.copytree(template, env_dir, symlinks=True, copy_function=_link_or_copy)
    python = env_dir / "bin" / "python"
    probe = subprocess.run(
        [str(python), "-I", "-c", "import importlib.metadata as m, importlib.util as u, sys; "
         f"print(sys.prefix, *(u.find_spec(n) is None for n in {BARE_ABSENT!r}), sep='\\n'); "
         f"print(*(n + '==' + m.version(n) for n in {FRESH_PACKAGES!r}), sep='\\n')"],
        cwd=env_dir, capture_output=True, text=True, check=True)
    assert probe.stdout.split() == [str(env_dir), *["True"] * len(BARE_ABSENT), *_pins()], \
        f"not a bare environment of its own with the pin and without {BARE_ABSENT}: {probe.stdout!r}"
    return python


def _template_unchanged() -> None:
    template = _template_dir()
    recorded = json.loads((template.parent / MANIFEST).read_text(encoding="utf-8"))
    assert _manifest(template) == recorded, "the run changed a file of the template environment"


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory) -> Path:
    yield _fresh_copy(tmp_path_factory.mktemp("fresh"))
    _template_unchanged()


@pytest.fixture(scope="module")
def local_site() -> str:
    """The built site served under the Pages project path, as the setup cell will fetch it."""
    with serve_site() as base:
        yield base.rstrip("/")


def _text_outputs(cell) -> list[str]:
    texts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            texts.append(out["text"])
        elif out["output_type"] in ("execute_result", "display_data") and "text/plain" in out["data"]:
            if "image/png" not in out["data"]:  # a figure's repr names its size only
                texts.append(out["data"]["text/plain"])
    return texts


def _run(nb, python: Path, tmp_path: Path) -> None:
    """Execute ``nb`` in a kernel of ``python``, from a folder outside the repository."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    spec_dir = tmp_path / "kernels" / "fresh"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh", "language": "python"}), encoding="utf-8")
    workdir = tmp_path / "elsewhere"  # no attn/ folder next to the notebook
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    km = KernelManager(kernel_name="fresh", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_dir.parent)]))
    client = NotebookClient(nb, km=km, timeout=CELL_TIMEOUT_S, resources={"metadata": {"path": str(workdir)}})
    client.km.start_kernel(cwd=str(workdir), env=env)
    client.execute()  # raises CellExecutionError on the first failing cell


@pytest.mark.full
def test_a_download_runs_in_a_bare_environment(fresh_python, local_site, tmp_path):
    nb = nbformat.read(_download(PAGE), as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace(BASEURL, local_site)
    _run(nb, fresh_python, tmp_path)
    installed = subprocess.run([str(fresh_python), "-m", "pip", "show", "attn"], capture_output=True, text=True)
    assert installed.returncode == 0, "the setup cell did not install attn"

    site = nbformat.read(BUILD / "jupyter_execute" / f"{PAGE}.ipynb", as_version=4)
    for book in (nb, site):  # a kernel may flush one print in several chunks: compare the whole stream
        CoalesceStreamsPreprocessor().preprocess(book, {})
    ran = [c for c in nb.cells[1:] if c.cell_type == "code"]
    expected = [c for c in site.cells if c.cell_type == "code"]
    assert [c.source for c in ran] == [c.source for c in expected]
    compared = 0
    for mine, theirs in zip(ran, expected, strict=True):
        if "nbval-ignore-output" in theirs.metadata.get("tags", []):
            continue
        assert _text_outputs(mine) == _text_outputs(theirs), mine.source
        compared += bool(_text_outputs(theirs))
    assert compared >= 3
    assert any("image/png" in out.get("data", {}) for c in ran for out in c.outputs), "no figure"


@pytest.mark.full
def test_with_the_site_unreachable_the_setup_cell_says_what_to_do(tmp_path):
    from nbclient.exceptions import CellExecutionError

    python = _fresh_copy(tmp_path)
    nb = nbformat.read(_download(PAGE), as_version=4)
    nb.cells = nb.cells[:1]
    nb.cells[0].source = nb.cells[0].source.replace(BASEURL, "http://127.0.0.1:9/fora-do-ar")  # discard port
    with pytest.raises(CellExecutionError) as failed:
        _run(nb, python, tmp_path)
    message = str(failed.value)
    assert "http://127.0.0.1:9/fora-do-ar" in message  # names the site it tried
    assert "pip install" in message and "repositório" in message, message[-1500:]  # what to do, in Portuguese
    _template_unchanged()

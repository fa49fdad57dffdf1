"""The built site is valid HTML: the Nu Html Checker (npm ``vnu-jar``, pinned in ``package-lock.json``;
Java from Debian, see ``make sysdeps``) over every ``.html`` file of the build.

Zero errors are allowed in HTML that the project, its notebooks or its Sphinx extensions write.
Errors that come only from third-party theme files are listed below, each by file and exact message,
so a new error anywhere else fails the test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parent.parent
HTML_DIR = Path(os.environ.get("SITE_HTML_DIR", ROOT / "_build" / "html")).resolve()
VNU_JAR = ROOT / "node_modules" / "vnu-jar" / "build" / "dist" / "vnu.jar"

# (file relative to the site, exact message) of errors in third-party files the site only copies.
# _static/webpack-macros.html and _static/sbt-webpack-macros.html are Jinja macro files of
# pydata-sphinx-theme and sphinx-book-theme that Sphinx copies into _static/ with the theme's static
# files; no page includes them and no reader opens them, but they are in the published tree.
THIRD_PARTY = {
    ('_static/sbt-webpack-macros.html', "Bad value “{{ pathto('_static/scripts/sphinx-book-theme.js', 1) }}” for attribute “src” on element “script”: Illegal character in path segment. “{” is not allowed."),
    ('_static/sbt-webpack-macros.html', "Bad value “{{ pathto('_static/styles/sphinx-book-theme.css', 1) }}” for attribute “href” on element “link”: Illegal character in path segment. “{” is not allowed."),
    ('_static/sbt-webpack-macros.html', 'Element “head” is missing a required instance of child element “title”.'),
    ('_static/sbt-webpack-macros.html', 'Non-space characters found without seeing a doctype first. Expected “<!DOCTYPE html>”.'),
    ('_static/webpack-macros.html', "Bad value “{{ pathto('_static/scripts/bootstrap.js', 1) }}?digest=55c26ed414f5f8a31ebb” for attribute “href” on element “link”: Illegal character in path segment. “{” is not allowed."),
    ('_static/webpack-macros.html', "Bad value “{{ pathto('_static/scripts/bootstrap.js', 1) }}?digest=55c26ed414f5f8a31ebb” for attribute “src” on element “script”: Illegal character in path segment. “{” is not allowed."),
    ('_static/webpack-macros.html', "Bad value “{{ pathto('_static/scripts/fontawesome.js', 1) }}?digest=55c26ed414f5f8a31ebb” for attribute “src” on element “script”: Illegal character in path segment. “{” is not allowed."),
    ('_static/webpack-macros.html', "Bad value “{{ pathto('_static/scripts/pydata-sphinx-theme.js', 1) }}?digest=55c26ed414f5f8a31ebb” for attribute “href” on element “link”: Illegal character in path segment. “{” is not allowed."),
    ('_static/webpack-macros.html', "Bad value “{{ pathto('_static/scripts/pydata-sphinx-theme.js', 1) }}?digest=55c26ed414f5f8a31ebb” for attribute “src” on element “script”: Illegal character in path segment. “{” is not allowed."),
    ('_static/webpack-macros.html', "Bad value “{{ pathto('_static/styles/pydata-sphinx-theme.css', 1) }}?digest=55c26ed414f5f8a31ebb” for attribute “href” on element “link”: Illegal character in path segment. “{” is not allowed."),
    ('_static/webpack-macros.html', "Bad value “{{ pathto('_static/styles/theme.css', 1) }}?digest=55c26ed414f5f8a31ebb” for attribute “href” on element “link”: Illegal character in path segment. “{” is not allowed."),
    ('_static/webpack-macros.html', 'Element “head” is missing a required instance of child element “title”.'),
    ('_static/webpack-macros.html', 'Non-space characters found without seeing a doctype first. Expected “<!DOCTYPE html>”.'),
}


# Pages of sphinx.ext.viewcode (the highlighted source of attn, under _modules/): Sphinx writes each
# function's block as a <div> inside the <pre>. (directory, exact message)
THIRD_PARTY_DIRS = {
    ("_modules/", "Element “div” not allowed as child of element “pre” in this context. "
                  "(Suppressing further errors from this subtree.)"),
}


def _third_party(error: tuple[str, str, str]) -> bool:
    return (error[0], error[1]) in THIRD_PARTY or any(
        error[0].startswith(folder) and error[1] == message for folder, message in THIRD_PARTY_DIRS)


def _check(files: list[str]) -> list[tuple[str, str, str]]:
    java = shutil.which("java")
    result = subprocess.run([java, "-Xss4m", "-jar", str(VNU_JAR), "--errors-only", "--format", "json", *files],
                            capture_output=True, text=True, check=False)
    messages = json.loads(result.stderr or result.stdout)["messages"]
    return [
        (Path(m["url"].removeprefix("file:")).relative_to(HTML_DIR).as_posix(), m["message"],
         (m.get("extract") or "").strip()[:160])
        for m in messages if m["type"] == "error" or m.get("subType") == "fatal"
    ]


def _errors() -> list[tuple[str, str, str]]:
    java = shutil.which("java")
    if java is None:
        pytest.fail("java is not installed: run `make sysdeps` (Debian's default-jre-headless)")
    if not VNU_JAR.is_file():
        pytest.fail(f"the Nu Html Checker is not installed in {VNU_JAR}: run `make mathjax` (npm ci)")
    # lite/ is the JupyterLite app (tools/build_lite.py, its own test in tests/test_lite.py), copied
    # whole from its packages: not HTML the book writes.
    files = sorted(str(p) for p in HTML_DIR.rglob("*.html") if p.relative_to(HTML_DIR).parts[0] != "lite")
    if not files:
        pytest.fail(f"no built site in {HTML_DIR}: run `make book` (or set SITE_HTML_DIR)")
    return _check(files)


@pytest.fixture(scope="module")
def errors():
    return _errors()


def test_site_html_is_valid(errors):
    ours = [e for e in errors if not _third_party(e)]
    assert not ours, "\n".join(f"{f}: {msg}\n    {extract}" for f, msg, extract in ours)


def test_third_party_exceptions_are_still_needed(errors):
    """An exception listed above that no longer occurs (theme update) is removed from the list."""
    seen = {(e[0], e[1]) for e in errors}
    assert THIRD_PARTY <= seen, sorted(THIRD_PARTY - seen)

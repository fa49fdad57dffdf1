"""A copy of the repository publishes itself with zero edits (tools/sphinx_site/identity.py derives the URLs).

The book is built a second time, into a temporary directory, as GitHub Actions would build it in a
student's copy: ``GITHUB_REPOSITORY=maria-silva/entrega-atividade4`` and the Pages URL the workflow reads
(tools/pages_base_url.py) in ``PAGES_BASE_URL``. The execution cache of ``make book`` is copied in, so nothing is executed
again (the build needs ``make book`` first; ``make test`` does that). Then every link that names
the site or the repository must name the student's, and nothing may name the placeholder.

The student's build is a whole second build (into a temporary directory): the full tier
(``make test-full``). Every pull request checks the derivation rules below and, on the site the
build made, the canonical links, the sitemap and the 404 page under the project path (tests/test_site.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sphinx_site.identity import IDENTITY_FILE, default_pages_url, derive_identity, github_slug

ROOT = Path(__file__).resolve().parent.parent

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
PLACEHOLDER = "aluno/atencao-transformers-do-zero"
SLUG = "maria-silva/entrega-atividade4"
SITE = "https://maria-silva.github.io/entrega-atividade4/"
REPO = "https://github.com/maria-silva/entrega-atividade4"
PREFIX = "/entrega-atividade4/"


# --------------------------------------------------------------------------- derivation rules


def test_github_slug_reads_https_and_ssh_remotes():
    for url in (f"{REPO}.git", REPO, f"{REPO}/", f"git@github.com:{SLUG}.git",
                f"ssh://git@github.com/{SLUG}.git", f"https://token@github.com/{SLUG}"):
        assert github_slug(url) == SLUG, url
    for url in ("", "https://gitlab.com/maria-silva/entrega-atividade4.git", "/srv/git/repo.git"):
        assert github_slug(url) is None, url


def test_default_pages_url_for_project_and_user_sites():
    assert default_pages_url(SLUG) == SITE
    assert default_pages_url("Maria-Silva/maria-silva.github.io") == "https://maria-silva.github.io/"


def test_the_run_wins_then_origin_then_config():
    config = (CONFIG["repository"]["url"], CONFIG["html"]["baseurl"])
    run = derive_identity(*config, env={"GITHUB_REPOSITORY": SLUG,
                                        "PAGES_BASE_URL": "https://atividade4.example.org"},
                          origin="git@github.com:other/fork.git")
    assert (run.repository_url, run.site_url) == (REPO, "https://atividade4.example.org/")
    pull_request = derive_identity(*config, env={"GITHUB_REPOSITORY": SLUG, "PAGES_BASE_URL": ""})
    assert (pull_request.repository_url, pull_request.site_url) == (REPO, SITE)
    local = derive_identity(*config, env={}, origin=f"{REPO}.git")
    assert (local.repository_url, local.site_url, local.source) == (REPO, SITE, "origin remote")
    fallback = derive_identity(*config, env={}, origin="")
    assert fallback.source == "_config.yml" and PLACEHOLDER in fallback.repository_url


# --------------------------------------------------------------------------- the student's build


@pytest.fixture(scope="module")
def student_build(tmp_path_factory) -> Path:
    cache = ROOT / "_build" / ".jupyter_cache"
    if not cache.is_dir():
        pytest.fail("no execution cache: run `make book` first (make test does)")
    out = tmp_path_factory.mktemp("student")
    shutil.copytree(cache, out / "_build" / ".jupyter_cache")  # make book's, as it is now
    env = {**os.environ, "GITHUB_REPOSITORY": SLUG, "PAGES_BASE_URL": SITE.rstrip("/")}
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run(
        [str(jupyter_book), "build", str(ROOT), "--path-output", str(out), "-W", "-n", "--keep-going"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "Executing notebook" not in result.stdout + result.stderr, "the execution cache was not reused"
    return out / "_build" / "html"


def _pages(html: Path) -> dict[str, str]:
    return {p.relative_to(html).as_posix(): p.read_text(encoding="utf-8") for p in html.rglob("*.html")}


@pytest.mark.full
def test_build_records_the_students_identity(student_build):
    record = json.loads((student_build.parent / IDENTITY_FILE).read_text(encoding="utf-8"))
    assert record["repository_url"] == REPO and record["site_url"] == SITE
    assert record["author"] == CONFIG["author"]


@pytest.mark.full
def test_canonical_links_and_sitemap_name_the_students_site(student_build):
    pages = _pages(student_build)
    canonical = {rel: re.findall(r'<link rel="canonical" href="([^"]+)"', text) for rel, text in pages.items()}
    assert canonical["book/intro.html"] == [SITE + "book/intro.html"]
    bad = {rel: links for rel, links in canonical.items() if any(not link.startswith(SITE) for link in links)}
    assert not bad, bad
    locs = re.findall(r"<loc>([^<]+)</loc>", (student_build / "sitemap.xml").read_text(encoding="utf-8"))
    assert SITE + "book/intro.html" in locs
    assert all(loc.startswith(SITE) for loc in locs), locs


@pytest.mark.full
def test_404_page_links_and_styles_live_under_the_project_path(student_build):
    page = (student_build / "404.html").read_text(encoding="utf-8")
    targets = re.findall(r'(?:href|src)="([^"#]+)"', page)
    local = [t for t in targets if not t.startswith(("https://", "http://", "mailto:", "data:"))]
    paths = [t.split("?")[0] for t in local]  # without the cache-busting ?v=... queries
    assert any(t.endswith(".css") for t in paths) and any(t.endswith(".js") for t in paths)
    bad = [t for t in local if not t.startswith(PREFIX)]
    assert not bad, bad
    assert f'href="{PREFIX}"' in page  # the "back to the home page" link


@pytest.mark.full
def test_repository_issue_and_binder_buttons_name_the_students_repository(student_build):
    page = (student_build / "book" / "atividade4" / "ex1_atencao_produto_escalar.html").read_text(encoding="utf-8")
    assert f'href="{REPO}"' in page
    assert f'href="{REPO}/issues/new?title=Problema%20na%20p%C3%A1gina%20%2Fbook%2Fatividade4%2F' in page
    assert "body=Descreva%20o%20problema%20aqui." in page and "Your%20issue" not in page
    binder = re.findall(r'href="(https://mybinder\.org/[^"]+)"', page)
    assert binder and all(link.startswith(f"https://mybinder.org/v2/gh/{SLUG}/main?") for link in binder), binder


@pytest.mark.full
def test_intro_shows_the_author_from_config(student_build):
    page = (student_build / "book" / "intro.html").read_text(encoding="utf-8")
    assert CONFIG["author"] in page and "{{" not in page


@pytest.mark.full
def test_nothing_names_the_placeholder(student_build):
    named = [
        p.relative_to(student_build).as_posix()
        for p in student_build.rglob("*")
        if p.is_file() and p.suffix in {".html", ".xml", ".txt", ".js", ".json", ".ipynb", ".md"}
        and (PLACEHOLDER in (text := p.read_text(encoding="utf-8", errors="replace")) or "aluno.github.io" in text)
    ]
    assert not named, named


def test_identity_is_written_in_one_place():
    """Only _config.yml names the author and the fallback repository; pages use {{ author }} / {repo}."""
    skip = {".git", ".venv", "_build", "node_modules", "tests"}
    files = []
    for top, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip]  # never walked into, rather than walked and dropped
        files += [Path(top, name) for name in names]
    named = sorted(
        path.relative_to(ROOT).as_posix() for path in files
        if path.is_file() and path.suffix in {".md", ".py", ".yml", ".yaml", ".toml", ".txt", ".json", ".cfg"}
        and path.name != "_config.yml"
        and any(s in path.read_text(encoding="utf-8", errors="replace")
                for s in (CONFIG["author"], PLACEHOLDER, "aluno.github.io"))
    )
    assert not named, named

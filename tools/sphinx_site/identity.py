"""Who and where: the repository and the site URL, derived from the run, never typed twice.

The repository and the site URL come from the run (see :func:`derive_identity`: ``GITHUB_REPOSITORY``
and ``PAGES_BASE_URL`` in GitHub Actions, else the ``origin`` remote when it is on GitHub, else
``repository.url`` / ``html.baseurl`` in ``_config.yml``). Canonical links, ``sitemap.xml``, the 404
page, the repository and issue buttons and the Binder link all follow ``html_baseurl`` /
``repository_url`` as set here. The author is ``author`` in ``_config.yml``; pages show it through
the MyST substitution ``{{ author }}``, and link to repository files with the role ``{repo}`path```
(sphinx.ext.extlinks). What a build used is recorded in ``site-identity.json`` next to its ``html/``
directory, for the tests. ``ROOT`` and ``TOOLS`` say where the repository and the build's own files are.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

TOOLS = Path(__file__).resolve().parent.parent  # tools/: the build's own files
ROOT = TOOLS.parent  # the repository
PAGES_URL_ENV = "PAGES_BASE_URL"  # set by the workflow from tools/pages_base_url.py (GitHub's Pages API)
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
       ``PAGES_BASE_URL`` (the Pages API's ``html_url``: custom domains and user sites included),
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


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _derive_identity, priority=300)  # before the others read html_baseurl
    app.connect("builder-inited", _record_identity)

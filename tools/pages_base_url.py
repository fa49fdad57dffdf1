"""Print ``base_url=<the repository's GitHub Pages URL>`` for ``$GITHUB_OUTPUT`` (the workflow's build job).

The URL is the ``html_url`` of GitHub's REST API ``GET /repos/{owner}/{repo}/pages``, without its
trailing slash: a custom domain and a ``<user>.github.io`` repository come out right
(tools/sphinx_site/identity.py reads it as ``PAGES_BASE_URL``). Standard library only: it runs before the
virtual environment exists. When Pages is not enabled, it fails and says what to switch on.

Environment: ``GITHUB_API_URL`` and ``GITHUB_REPOSITORY`` (set by GitHub Actions), ``GH_TOKEN`` (the
job's token; the job needs ``pages: read``).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request

NOT_ENABLED = ("GitHub Pages is not enabled for {repo}: in the repository, "
               "Settings -> Pages -> Source: GitHub Actions, then re-run this workflow.")


def pages_base_url(api_url: str, repository: str, token: str) -> str:
    """The Pages site URL of ``repository`` (``owner/name``), e.g. ``https://owner.github.io/name``."""
    request = urllib.request.Request(
        f"{api_url.rstrip('/')}/repos/{repository}/pages",
        headers={"Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}",
                 "X-GitHub-Api-Version": "2022-11-28"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        html_url = json.load(response)["html_url"]
    return html_url.rstrip("/")


def main() -> int:
    repo = os.environ["GITHUB_REPOSITORY"]
    try:
        url = pages_base_url(os.environ.get("GITHUB_API_URL", "https://api.github.com"), repo,
                             os.environ["GH_TOKEN"])
    except urllib.error.HTTPError as error:
        if error.code == 404:
            print(NOT_ENABLED.format(repo=repo), file=sys.stderr)
            return 1
        raise
    print(f"base_url={url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

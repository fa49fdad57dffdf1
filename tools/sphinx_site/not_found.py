"""The 404 page, under the GitHub Pages project path (configures sphinx-notfound-page).

sphinx-notfound-page writes absolute links; their prefix is the path of ``html.baseurl``
(``/<repository>/``), so the page keeps its styles and navigation at any depth of a missing URL.
"""

from __future__ import annotations

from urllib.parse import urlparse

from sphinx.application import Sphinx
from sphinx.config import Config

NOT_FOUND_TITLE = "Página não encontrada"
NOT_FOUND_BODY = (
    "<h1>Página não encontrada</h1>\n"
    "<p>O endereço pedido não existe neste site. Ele pode ter mudado de lugar ou conter um erro "
    "de digitação.</p>\n"
    '<p><a href="{prefix}">Voltar à página inicial do curso</a> ou use a busca e o índice ao '
    "lado.</p>\n"
)


def site_prefix(config: Config) -> str:
    """The URL path of the site's root (``/<repository>/``), from ``html_baseurl``."""
    path = urlparse(config.html_baseurl or "").path or "/"
    return path if path.endswith("/") else path + "/"


def _configure(app: Sphinx, config: Config) -> None:
    prefix = site_prefix(config)
    config.notfound_urls_prefix = prefix
    config.notfound_context = {
        "title": NOT_FOUND_TITLE,
        "body": NOT_FOUND_BODY.format(prefix=prefix),
    }


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _configure, priority=400)  # after identity.py set html_baseurl

"""The built site as its readers get it, checked in headless Chromium (Debian's ``chromium``).

The HTML directory comes from ``SITE_HTML_DIR`` (default ``_build/html``); screenshots go to
``screenshots/`` next to it (``_build/screenshots``), with ``site_report.json`` (pages crawled and
bytes transferred per page). The site is served on 127.0.0.1 under the GitHub Pages project path
of the URL the build used (``site-identity.json`` next to the HTML directory, tools/sphinx_site/identity.py), with GitHub Pages' behaviour for missing files
(``404.html`` with status 404) and gzip for text assets.

One crawl visits every HTML page of the build (each in a fresh browser context, so sizes are cold-
cache sizes); the tests below then assert on what it recorded. Every page is visited at a desktop
viewport (1280 x 900) with axe-core (npm ``axe-core``, pinned in ``package-lock.json``, injected into
the page), and again at a phone's (390 x 844, screenshots ``*--phone.jpg``). The pull-request tier
leaves two things of the phone visits to the full tier (a test marked ``full``, see :func:`crawl`):
the ``_modules/`` source listings, and axe-core at the phone's width.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from helpers import (
    BASEURL,
    HTML_DIR,
    IDENTITY,
    IDENTITY_FILE,
    ROOT,
    SHOT_DIR,
    BrowserPool,
    full_page_shot,
    serve_site,
)

pytestmark = pytest.mark.site

REPO_URL = IDENTITY.get("repository_url", "")
AXE_JS = ROOT / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
MISSING_URL_PATH = "pagina/que/nao/existe.html"  # a nested missing URL, to exercise 404.html
SEARCH_TERM = "atenção"


# --------------------------------------------------------------------------- crawl


@dataclass
class PageVisit:
    rel: str  # path relative to HTML_DIR, e.g. "book/intro.html"
    url: str
    viewport: str = "desktop"
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    axe: list[dict] | None = None  # one entry per violated axe-core rule; None where axe did not run
    transfer_bytes: int = 0
    decoded_bytes: int = 0
    requests: int = 0
    shot_missing: bool = False  # its screenshot timed out (helpers.full_page_shot)


# Waits for MathJax (when the page loads it) and for web fonts.
SETTLE_JS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await document.fonts.ready;
}"""

# Everything the assertions need, read from the rendered DOM.
FACTS_JS = r"""() => {
  const visible = (root) => {
    const clone = root.cloneNode(true);
    clone.querySelectorAll('pre, code, script, style, textarea, mjx-container, .MathJax, mjx-assistive-mml, .onlyprint')
         .forEach((n) => n.remove());
    return clone.textContent;
  };
  const article = document.querySelector('article') || document.body;
  const isFigure = (img) => !!img.closest('figure, .cell_output');
  const imgs = [...document.querySelectorAll('img')].map((img) => {
    const r = img.getBoundingClientRect();
    let corners = null;
    if (img.complete && img.naturalWidth > 0 && isFigure(img)) {
      try {
        const c = document.createElement('canvas');
        c.width = img.naturalWidth; c.height = img.naturalHeight;
        const ctx = c.getContext('2d');
        ctx.drawImage(img, 0, 0);
        const w = img.naturalWidth - 1, h = img.naturalHeight - 1;
        corners = [[0, 0], [w, 0], [0, h], [w, h]].map(([x, y]) => [...ctx.getImageData(x, y, 1, 1).data]);
      } catch (e) { corners = 'unreadable: ' + e; }
    }
    return {src: img.currentSrc || img.src, alt: img.getAttribute('alt'), complete: img.complete,
            naturalWidth: img.naturalWidth, width: r.width, isFigure: isFigure(img),
            corners};
  });
  const figures = [...article.querySelectorAll('figure')].map((f) => ({
    id: f.id || (f.querySelector('[id]') || {}).id || '',
    number: (f.querySelector('.caption-number') || {}).textContent || '',
    caption: (f.querySelector('figcaption') || {}).textContent || '',
  }));
  const outputs = [...document.querySelectorAll(
      '.cell_output .output.traceback, .cell_output .output.error, .cell_output .output.stderr')]
      .map((n) => n.textContent.slice(0, 300));
  const outputText = [...document.querySelectorAll('.cell_output')].map((n) => n.textContent).join('\n');
  if (/Traceback \(most recent call last\)/.test(outputText)) {
    outputs.push('traceback in a cell output: ' + outputText.match(/.{0,200}Traceback \(most recent call last\).{0,200}/s)[0]);
  }
  const ids = [...document.querySelectorAll('[id]')].map((n) => n.id)
      .concat([...document.querySelectorAll('a[name]')].map((n) => n.getAttribute('name')));
  const links = [...document.querySelectorAll('a[href]')].map((a) => a.href);
  const canonical = (document.querySelector('link[rel=canonical]') || {}).href || null;
  const downloads = [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href'))
      .filter((h) => /_sources\/.*\.ipynb$/.test(h));
  const launch = [...document.querySelectorAll('a[href]')].map((a) => a.href)
      .filter((h) => h.startsWith('https://mybinder.org/'));
  const runInBrowser = [...document.querySelectorAll('a.btn-run-in-browser')]
      .map((a) => ({href: a.href, text: a.textContent.trim()}));
  const chrome = [...document.querySelectorAll('.bd-header-article, .bd-sidebar-primary, .bd-sidebar-secondary, footer, .skip-link, .prev-next-area')];
  const chromeText = chrome.map((n) => n.textContent).join(' ') + ' ' +
      chrome.flatMap((n) => [...n.querySelectorAll('[title], [aria-label], [data-bs-title], [placeholder]')])
           .map((n) => ['title', 'aria-label', 'data-bs-title', 'placeholder'].map((a) => n.getAttribute(a) || '').join(' '))
           .join(' ');
  return {
    lang: document.documentElement.lang,
    title: document.title,
    description: (document.querySelector('meta[name="description"]') || {}).content || '',
    bodyFont: getComputedStyle(document.body).fontFamily,
    scripts: [...document.querySelectorAll('script[src]')].map((s) => s.getAttribute('src')),
    visibleText: visible(document.body),  // the navigation too: page titles may hold math
    mathErrors: document.querySelectorAll('mjx-merror, .MathJax_Error').length,
    mathRendered: document.querySelectorAll('mjx-container').length,
    mathSource: document.querySelectorAll('.math').length,
    imgs, figures, outputs, ids, links, canonical, downloads, launch, runInBrowser, chromeText,
    overflowX: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    searchHits: document.querySelectorAll('#search-results ul.search li').length,
    searchSummary: (document.querySelector('#search-results p.search-summary') || {}).textContent || '',
  };
}"""

# axe-core over the whole document (WCAG 2.x A/AA rules plus axe's best practices).
AXE_RUN_JS = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map((v) => ({id: v.id, impact: v.impact, count: v.nodes.length,
      nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ') + ': ' + (n.failureSummary || '').slice(0, 200))}));
}"""

# Figures load lazily (loading="lazy"): after the first-visit sizes are taken, every image is asked for
# at once (a lazy image set to eager loads at once) and the page is scrolled through to its end, so that
# every image has loaded before the DOM is read and the full-page screenshot is taken. (Scrolling alone
# is not enough: on a busy machine a 20 ms step can pass without a frame, an image far from the final
# scroll position is then never asked for, and the wait below never ends.)
LOAD_ALL_JS = """async () => {
  for (const i of document.images) { if (i.loading === 'lazy') i.loading = 'eager'; }
  for (let y = 0; y < document.documentElement.scrollHeight; y += window.innerHeight) {
    window.scrollTo(0, y);
    await new Promise((r) => setTimeout(r, 20));
  }
  await Promise.all([...document.images].filter((i) => !i.complete)
      .map((i) => new Promise((r) => { i.addEventListener('load', r); i.addEventListener('error', r); })));
  window.scrollTo(0, 0);
}"""

SIZES_JS = """() => {
  const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
  return {transfer: entries.reduce((s, e) => s + (e.transferSize || 0), 0),
          decoded: entries.reduce((s, e) => s + (e.decodedBodySize || 0), 0),
          count: entries.length};
}"""


# `make page` visits one page: SITE_PAGES (paths relative to the HTML directory, separated by spaces)
# limits the crawl to them; the Makefile then deselects the checks that need every page.
CRAWLED = os.environ.get("SITE_PAGES", "").split()


def _site_pages() -> list[str]:
    pages = sorted(
        p.relative_to(HTML_DIR).as_posix()
        for p in HTML_DIR.rglob("*.html")
        if not p.relative_to(HTML_DIR).parts[0].startswith(("_static", "_sources", "_images", "lite"))
    )
    return pages


def _shot_path(rel: str, color_scheme: str, viewport: str) -> Path:
    suffix = ("" if color_scheme == "light" else "--" + color_scheme) + ("" if viewport == "desktop" else "--" + viewport)
    return SHOT_DIR / _shot_name(rel, suffix)


# Full-page screenshots (the CI job's "screenshots" artifact, for a reviewer's eyes; no test reads them)
# as JPEG: Chromium encodes a page-long JPEG in half the time of a PNG, at about the same size.
SHOT_SUFFIX, SHOT_QUALITY = ".jpg", 85


def _shot_name(rel: str, suffix: str = "") -> str:
    return rel.replace("/", "__").removesuffix(".html") + suffix + SHOT_SUFFIX


def _browser_favicon(request_url: str) -> bool:
    """Chromium's own /favicon.ico probe at the host root (outside the project path, which GitHub
    Pages does not serve from this repository; e.g. while the root redirect page is loading)."""
    return urlsplit(request_url).path == "/favicon.ico"


async def _visit(browser, base: str, rel: str, *, color_scheme: str = "light", viewport: str = "desktop",
                 axe: bool = True, shot: bool = True) -> PageVisit:
    if rel == "404.html":
        url = base + MISSING_URL_PATH
    elif rel == "search.html":
        url = base + rel + "?q=" + SEARCH_TERM
    else:
        url = base + rel
    visit = PageVisit(rel=rel, url=url, viewport=viewport)
    context = await browser.new_context(viewport=VIEWPORTS[viewport], color_scheme=color_scheme, locale="pt-BR",
                                        is_mobile=viewport == "phone", has_touch=viewport == "phone")
    page = await context.new_page()
    def on_console(msg):
        expected_404 = (rel == "404.html" and msg.location.get("url") == url) or _browser_favicon(
            msg.location.get("url", ""))
        if msg.type == "error" and not expected_404:
            visit.console_errors.append(f"{msg.text} at {msg.location.get('url')}")

    page.on("console", on_console)
    page.on("pageerror", lambda e: visit.console_errors.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: visit.failed_requests.append(f"{r.url} ({r.failure})"))

    def on_response(resp):
        if resp.status >= 400 and not (rel == "404.html" and resp.url == url) and not _browser_favicon(resp.url):
            visit.failed_requests.append(f"{resp.url} (HTTP {resp.status})")

    def on_request(req):
        if not req.url.startswith((base, "data:", "blob:", "about:")):
            visit.foreign_requests.append(req.url)

    page.on("response", on_response)
    page.on("request", on_request)
    try:
        await page.goto(url, wait_until="load")
        if rel == "index.html":  # a redirect page: it must land on the intro page
            await page.wait_for_url("**/book/intro.html")
            await page.wait_for_load_state("load")
        await page.evaluate(SETTLE_JS)
        if rel == "search.html":
            await page.wait_for_function(
                "document.querySelector('#search-results p.search-summary')"
                " && document.querySelector('#search-results p.search-summary').textContent.length > 0")
        await page.wait_for_load_state("networkidle")
        sizes = await page.evaluate(SIZES_JS)  # what a first visit transfers, before any scrolling
        visit.transfer_bytes, visit.decoded_bytes, visit.requests = sizes["transfer"], sizes["decoded"], sizes["count"]
        await page.evaluate(LOAD_ALL_JS)
        visit.facts = await page.evaluate(FACTS_JS)
        if axe:
            await page.add_script_tag(path=str(AXE_JS))
            visit.axe = await page.evaluate(AXE_RUN_JS)
        if shot:  # last, after every check has read the page
            visit.shot_missing = not await full_page_shot(page, _shot_path(rel, color_scheme, viewport),
                                                          type="jpeg", quality=SHOT_QUALITY)
    finally:
        await context.close()
    return visit


# Browsers the crawl uses at once, each its own Chromium process showing one page at a time (so the
# visited page is always the one in front, and contexts share nothing: every size is a cold one).
# Visits mostly wait (on the network idle time, on timers, on the screenshot's encoding), so two
# processes overlap those waits even on two busy cores.
CRAWL_BROWSERS = int(os.environ.get("SITE_CRAWL_BROWSERS", "2"))
VISIT_TIMEOUT_S = 300


async def _crawl(base: str, full: bool) -> tuple[dict, dict, dict]:
    from playwright.async_api import async_playwright

    async def visit(rel, color_scheme="light", viewport="desktop"):
        axe = color_scheme == "light" and (viewport == "desktop" or full)  # the default (light) rendering
        async with pool.lease() as browser:  # a visit that hangs fails the crawl instead of stalling it
            return await asyncio.wait_for(
                _visit(browser, base, rel, color_scheme=color_scheme, viewport=viewport, axe=axe), VISIT_TIMEOUT_S)

    async with async_playwright() as pw:
        pool = BrowserPool(pw, CRAWL_BROWSERS)
        try:
            pages = CRAWLED or _site_pages()
            desktop = await asyncio.gather(*(visit(rel) for rel in pages))
            visits = dict(zip(pages, desktop, strict=True))
            with_figures = [rel for rel, v in visits.items() if any(img["isFigure"] for img in v.facts["imgs"])]
            at_phone = [rel for rel in pages if full or not rel.startswith("_modules/")]
            later = await asyncio.gather(*(visit(rel, viewport="phone") for rel in at_phone),
                                         *(visit(rel, color_scheme="dark") for rel in with_figures))
            phone, dark = later[:len(at_phone)], later[len(at_phone):]
        finally:
            await pool.close()
    return visits, dict(zip(at_phone, phone, strict=True)), dict(zip(with_figures, dark, strict=True))


@pytest.fixture(scope="module")
def crawl(request):
    """Serve the site, visit every page at the desktop viewport and again at a phone's (plus dark-mode
    shots of pages with figures).

    When the run includes the full tier (a selected test is marked ``full``), the phone visits also
    cover the ``_modules/`` source listings and run axe-core; the pull-request tier leaves both out.
    """
    if not (HTML_DIR / "index.html").is_file():
        pytest.fail(f"no built site in {HTML_DIR}: run `make book` (or set SITE_HTML_DIR)")
    if not AXE_JS.is_file():
        pytest.fail(f"axe-core is not installed in {AXE_JS.parent}: run `make mathjax` (npm ci)")
    if not IDENTITY:
        pytest.fail(f"no {IDENTITY_FILE} (written by tools/sphinx_site/identity.py): rebuild with `make book`")

    SHOT_DIR.mkdir(parents=True, exist_ok=True)
    with serve_site() as base:
        full = any(item.get_closest_marker("full") for item in request.session.items)
        visits, phone, dark = asyncio.run(_crawl(base, full))
    shots = {_shot_path(v.rel, scheme, v.viewport).name
             for scheme, group in (("light", visits), ("light", phone), ("dark", dark)) for v in group.values()}
    for old in [*SHOT_DIR.glob("*.png"), *SHOT_DIR.glob("*" + SHOT_SUFFIX)]:  # of pages no longer there
        if old.name not in shots and not old.name.startswith("lite__"):  # (or of an older format)
            old.unlink()
    report = {
        "pages_crawled": len(visits),
        "pages": {rel: {"transfer_bytes": v.transfer_bytes, "decoded_bytes": v.decoded_bytes,
                        "requests": v.requests} for rel, v in visits.items()},
        "axe": {f"{rel} ({kind})": v.axe for kind, group in (("desktop", visits), ("phone", phone))
                for rel, v in group.items() if v.axe},
        "screenshots_missing": sorted(_shot_path(v.rel, scheme, v.viewport).name for scheme, group in
                                      (("light", visits), ("light", phone), ("dark", dark))
                                      for v in group.values() if v.shot_missing),
    }
    (SHOT_DIR / "site_report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return {"base": base, "visits": visits, "dark": dark, "phone": phone}


def _all_visits(crawl):
    return [*crawl["visits"].values(), *crawl["dark"].values(), *crawl["phone"].values()]


# --------------------------------------------------------------------------- tests


def test_every_page_was_crawled(crawl):
    pages = set(crawl["visits"])
    assert {"index.html", "404.html", "search.html", "book/intro.html", "book/api.html"} <= pages
    assert len(pages) == len(_site_pages())
    assert all(v.axe is not None for v in crawl["visits"].values())  # axe-core on every page, at 1280 px
    assert {rel for rel in pages if not rel.startswith("_modules/")} <= set(crawl["phone"])


@pytest.mark.full
def test_full_tier_visits_every_page_at_phone_width_with_axe(crawl):
    """The full tier's share of the crawl (the pull-request tier leaves both out, for time): the
    ``_modules/`` source listings at the phone's width too, and axe-core on every phone visit."""
    assert set(crawl["phone"]) == set(crawl["visits"])
    assert all(v.axe is not None for v in crawl["phone"].values())


def test_no_console_errors(crawl):
    bad = {v.url: v.console_errors for v in _all_visits(crawl) if v.console_errors}
    assert not bad, bad


def test_no_failed_requests(crawl):
    bad = {v.url: v.failed_requests for v in _all_visits(crawl) if v.failed_requests}
    assert not bad, bad


def test_no_request_leaves_the_site(crawl):
    bad = {v.url: v.foreign_requests for v in _all_visits(crawl) if v.foreign_requests}
    assert not bad, bad


# Math delimiters or TeX commands left in the visible text (page titles hold no math, so a {doc}
# link never shows raw TeX).
RAW_MATH = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\$\\[A-Za-z]|\\[A-Za-z]{2,}")


def test_math_is_rendered(crawl):
    bad = {}
    for v in crawl["visits"].values():
        facts = v.facts
        raw = RAW_MATH.findall(facts["visibleText"])
        if raw or facts["mathErrors"] or (facts["mathSource"] and not facts["mathRendered"]):
            bad[v.rel] = {"raw": raw[:5], "mathjax_errors": facts["mathErrors"],
                          "math_nodes": facts["mathSource"], "rendered": facts["mathRendered"]}
    assert not bad, bad


def test_images_load_and_have_alt_text(crawl):
    bad = {}
    for v in _all_visits(crawl):
        for img in v.facts["imgs"]:
            problems = []
            if not img["complete"] or img["naturalWidth"] == 0:
                problems.append("does not load")
            if not (img["alt"] or "").strip():
                problems.append("no alt text")
            if problems:
                bad.setdefault(v.url, []).append((img["src"], problems))
    assert not bad, bad


def test_figures_have_an_opaque_white_background(crawl):
    """Legible in the theme's dark mode: the four corners of every content image are opaque white."""
    bad = {}
    for v in crawl["visits"].values():
        for img in v.facts["imgs"]:
            corners = img["corners"]
            if img["isFigure"] and img["src"].endswith(".png") and (
                    not isinstance(corners, list)
                    or any(a < 255 or min(r, g, b) < 240 for r, g, b, a in corners)):
                bad.setdefault(v.rel, []).append((img["src"].rsplit("/", 1)[-1], corners))
    assert not bad, bad


def test_figures_are_numbered_and_referenced(crawl):
    visits = crawl["visits"]
    targets = set()
    for v in visits.values():
        for link in v.facts["links"]:
            parts = urlsplit(link)
            if parts.fragment:
                targets.add(parts.fragment)
    bad = {}
    for v in visits.values():
        for fig in v.facts["figures"]:
            if not fig["number"].strip():
                bad.setdefault(v.rel, []).append(f"figure {fig['id'] or fig['caption'][:40]!r} has no number")
            elif fig["id"] not in targets:
                bad.setdefault(v.rel, []).append(f"figure {fig['id']!r} ({fig['number'].strip()}) is never referenced")
    assert not bad, bad


def test_no_error_in_cell_outputs(crawl):
    bad = {v.rel: v.facts["outputs"] for v in crawl["visits"].values() if v.facts["outputs"]}
    assert not bad, bad


def test_internal_links_and_anchors_resolve(crawl):
    base = crawl["base"]
    ids = {rel: set(v.facts["ids"]) for rel, v in crawl["visits"].items()}
    bad = {}
    for v in crawl["visits"].values():
        for link in v.facts["links"]:
            if not link.startswith(base):
                continue
            parts = urlsplit(link)
            rel = unquote(parts.path[len(urlsplit(base).path):])
            if link.split("#")[0] == v.url.split("?")[0].split("#")[0]:
                rel = v.rel  # same-page anchor (the 404 page is served at a missing URL)
            target = HTML_DIR / rel
            if target.is_dir():
                target, rel = target / "index.html", (rel.rstrip("/") + "/index.html").lstrip("/")
            if rel == MISSING_URL_PATH or not target.is_file():
                bad.setdefault(v.rel, []).append(f"{link}: no such file")
                continue
            fragment = unquote(parts.fragment)
            if fragment and rel.endswith(".html") and rel not in ids:  # not visited (`make page`): its file's ids
                ids[rel] = set(re.findall(r'\b(?:id|name)="([^"]+)"', target.read_text(encoding="utf-8")))
            if fragment and rel.endswith(".html") and fragment not in ids[rel]:
                bad.setdefault(v.rel, []).append(f"{link}: no element with id {fragment!r}")
    assert not bad, bad


def test_search_finds_the_course_topic(crawl):
    facts = crawl["visits"]["search.html"].facts
    assert facts["searchHits"] > 0, facts["searchSummary"]


def test_no_page_scrolls_sideways(crawl):
    """At 1280 px and at a phone's 390 px (the source listings at 390 px in the full tier only) the
    page body never scrolls sideways (wide tables, code and math scroll inside their own box)."""
    bad = {f"{v.url} ({v.viewport})": v.facts["overflowX"] for v in _all_visits(crawl) if v.facts["overflowX"] > 0}
    assert not bad, bad


AXE_BLOCKING = ("critical", "serious")
# Moderate and minor axe-core findings deliberately kept, each with the reason (rule id -> reason).
AXE_KEPT: dict[str, str] = {}


def _axe_visits(crawl):
    return [v for v in [*crawl["visits"].values(), *crawl["phone"].values()] if v.axe is not None]


def test_accessibility_no_critical_or_serious_violation(crawl):
    bad = {f"{v.rel} ({v.viewport})": [r for r in v.axe if r["impact"] in AXE_BLOCKING] for v in _axe_visits(crawl)}
    bad = {k: rules for k, rules in bad.items() if rules}
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)


def test_accessibility_minor_findings_are_the_known_ones(crawl):
    bad = {f"{v.rel} ({v.viewport})": [r for r in v.axe if r["impact"] not in AXE_BLOCKING and r["id"] not in AXE_KEPT]
           for v in _axe_visits(crawl)}
    bad = {k: rules for k, rules in bad.items() if rules}
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)


def test_language_and_canonical_urls(crawl):
    bad = {}
    for rel, v in crawl["visits"].items():
        if v.facts["lang"] != "pt-BR":
            bad[rel] = f"html lang={v.facts['lang']!r}"
        expected = BASEURL + ("book/intro.html" if rel == "index.html" else rel)
        if rel != "404.html" and v.facts["canonical"] != expected:
            bad[rel] = f"canonical {v.facts['canonical']!r}, expected {expected!r}"
    assert not bad, bad


def test_theme_stylesheet_applies(crawl):
    """The pages link a trimmed copy of the theme's stylesheet (tools/sphinx_site/icons.py): it still styles
    them (a broken copy leaves the browser's default serif font)."""
    bad = {v.rel: v.facts["bodyFont"] for v in _all_visits(crawl) if "sans-serif" not in v.facts["bodyFont"]}
    assert not bad, bad


def test_every_page_has_a_portuguese_description(crawl):
    bad = {rel: v.facts["description"] for rel, v in crawl["visits"].items()
           if len(v.facts["description"]) < 40 or not re.search(r"\b(de|do|da|e|o|a|em|que)\b", v.facts["description"])}
    assert not bad, bad


# A first visit to any page transfers at most this much (gzip), and the heavy scripts the pages no
# longer need (math is rendered at build time, icons are a font subset) stay out of every page.
FIRST_VISIT_BYTES = 600_000
# The search page is the exception: Sphinx's searchtools.js downloads the index and then the HTML of
# every hit to write its snippet, so its transfer grows with the pages that match SEARCH_TERM.
SEARCH_VISIT_BYTES = 1_000_000
HEAVY_SCRIPTS = ("fontawesome.js", "tex-chtml.js")


def test_pages_are_light(crawl):
    heavy = {rel: [s for s in v.facts["scripts"] if any(h in s for h in HEAVY_SCRIPTS)]
             for rel, v in crawl["visits"].items()}
    assert not {rel: s for rel, s in heavy.items() if s}, heavy
    big = {rel: v.transfer_bytes for rel, v in crawl["visits"].items()
           if v.transfer_bytes > (SEARCH_VISIT_BYTES if rel == "search.html" else FIRST_VISIT_BYTES)}
    assert not big, big


def test_404_page_works_under_the_project_path(crawl):
    visit = crawl["visits"]["404.html"]
    assert "Página não encontrada" in visit.facts["title"]
    assert visit.facts["links"], "the 404 page has no navigation"
    assert not visit.failed_requests and not visit.console_errors


def test_sitemap_lists_every_content_page_under_the_base_url():
    sitemap = (HTML_DIR / "sitemap.xml").read_text(encoding="utf-8")
    locs = set(re.findall(r"<loc>([^<]+)</loc>", sitemap))
    content = {rel for rel in _site_pages() if rel.startswith("book/")}
    assert locs == {BASEURL + rel for rel in content}


STATIC_LINK = re.compile(r'(?:href|src)="[^"]*?_static/([^"?#]+)(\?[^"#]*)?"')


def test_every_page_links_each_static_file_alike():
    """A page that an incremental build rewrote links each stylesheet and script as a fresh build's
    pages do: with the same ``?v=<checksum>`` or with none (tools/sphinx_site/assets.py)."""
    queries: dict[str, dict[str, list[str]]] = {}
    for rel in _site_pages():
        for name, query in STATIC_LINK.findall((HTML_DIR / rel).read_text(encoding="utf-8")):
            queries.setdefault(name, {}).setdefault(query, []).append(rel)
    assert queries, "no page links a file of _static/"
    mixed = {name: {query or "(none)": pages[:3] for query, pages in by_query.items()}
             for name, by_query in queries.items() if len(by_query) > 1}
    assert not mixed, f"static files linked with different checksums by different pages: {mixed}"


THEME_ENGLISH = ("Skip to main content", "Back to top", "Search this book", "Repository", "Open issue",
                 "Launch on", "Toggle primary sidebar", "Toggle secondary sidebar", "On this page",
                 "Color mode", "previous page", "next page", "Download this page", "Print to PDF",
                 "Contents", "By ")


def test_theme_strings_are_portuguese(crawl):
    bad = {}
    for rel, v in crawl["visits"].items():
        found = [s for s in THEME_ENGLISH if s in v.facts["chromeText"]]
        if found:
            bad[rel] = found
    assert not bad, bad


def test_notebook_pages_offer_ipynb_download_and_binder(crawl):
    bad = {}
    for rel, v in crawl["visits"].items():
        source = HTML_DIR / "_sources" / Path(rel).with_suffix(".ipynb")
        if not source.is_file():
            continue
        if not v.facts["downloads"]:
            bad[rel] = "no .ipynb download link"
        elif not any(link.startswith("https://mybinder.org/v2/gh/" + REPO_URL.split("github.com/")[1])
                     for link in v.facts["launch"]):
            bad[rel] = f"no Binder link to {REPO_URL}: {v.facts['launch']}"
        elif not any(b["text"].startswith("Executar no navegador")
                     and b["href"].startswith(crawl["base"] + "lite/notebooks/index.html?path=")
                     and b["href"].endswith("?path=" + str(Path(rel).with_suffix(".ipynb")))
                     for b in v.facts["runInBrowser"]):
            bad[rel] = f"no 'Executar no navegador' button opening this page in lite/: {v.facts['runInBrowser']}"
    assert not bad, bad
    assert any((HTML_DIR / "_sources").rglob("*.ipynb")), "no notebook page found"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def test_binder_environment_opens_md_as_notebooks_with_the_book_pins():
    binder = _pins(ROOT / "binder" / "requirements.txt")
    book = _pins(ROOT / "requirements.txt")
    assert "jupytext" in binder and "jupyterlab" in binder
    assert {name: v for name, v in binder.items() if book.get(name, v) != v} == {}
    post_build = (ROOT / "binder" / "postBuild").read_text(encoding="utf-8")
    assert "cp binder/overrides.json" in post_build and "pip install --no-deps -e ." in post_build
    viewers = json.loads((ROOT / "binder" / "overrides.json").read_text(encoding="utf-8"))
    assert viewers["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["markdown"] == "Jupytext Notebook"
    assert "binder/overrides.json" in (ROOT / "Makefile").read_text(encoding="utf-8")  # `make lab` uses it too

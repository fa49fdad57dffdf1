"""What a reader does with the page's own controls (issue 33), in headless Chromium over the built site.

Each test does what the reader does and checks what they would see:

* taps the header's ☰ (table of contents) and ≡ (sections of this page) at a phone's 390 px, a
  tablet's 820 px and a desktop's 1280 px, and checks that what each one controls opens and closes;
* counts the search fields a desktop reader sees, and types into the search page's field to measure
  that its magnifier leaves the typed text clear;
* opens the phone header's one run menu, named by its visible text, holding both ways to run the page;
* reads the math as a screen reader gets it (MathJax's MathML), where a Portuguese word is one token;
* prints a page (print media at A4 width) and measures that no code line runs past its box.

The site is the one ``SITE_HTML_DIR`` names (default ``_build/html``), served as in test_site.py.
"""

from __future__ import annotations

import re

import pytest
from helpers import HTML_DIR, launch_chromium, serve_site

pytestmark = pytest.mark.site

WIDTHS = {"phone": 390, "tablet": 820, "desktop": 1280}
HEIGHT = 844
NARROW = 992  # below this width pydata-sphinx-theme shows a sidebar as a dialog over the page
# One page of each kind: the intro (no code), a long lesson, a notebook page (the most header buttons).
NAV_PAGES = ["book/intro.html", "book/aula702/licao.html", "book/atividade4/ex1_atencao_produto_escalar.html"]
EX1 = "book/atividade4/ex1_atencao_produto_escalar.html"
CONTENT_PAGES = sorted(p.relative_to(HTML_DIR).as_posix() for p in (HTML_DIR / "book").rglob("*.html"))
# Every page with the article header (all but the root's redirect page).
HEADER_PAGES = sorted(p.relative_to(HTML_DIR).as_posix() for p in HTML_DIR.rglob("*.html")
                      if not p.relative_to(HTML_DIR).parts[0].startswith(("_static", "_sources", "_images", "lite"))
                      and 'class="bd-header-article' in p.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def site():
    if not (HTML_DIR / EX1).is_file():
        pytest.fail(f"no built site in {HTML_DIR}: run `make book` (or set SITE_HTML_DIR)")
    from playwright.sync_api import sync_playwright

    with serve_site() as base, sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            yield {"base": base, "browser": browser}
        finally:
            browser.close()


def _open(site, rel: str, width: int, **kwargs):
    """A new context on ``rel`` at ``width`` (a touch screen below the desktop's), loaded with its fonts."""
    touch = width < WIDTHS["desktop"]
    context = site["browser"].new_context(viewport={"width": width, "height": HEIGHT}, locale="pt-BR",
                                          is_mobile=touch, has_touch=touch, **kwargs)
    page = context.new_page()
    page.goto(site["base"] + rel, wait_until="load")
    page.evaluate("document.fonts.ready")
    return context, page


def _press(page, locator, width: int) -> None:
    locator.tap() if width < WIDTHS["desktop"] else locator.click()


# --------------------------------------------------------------------------- 1. ☰ and ≡

# Where a sidebar shows: the dialog it opens in below NARROW, else the sidebar in the page.
SHOWN_JS = """(id) => {
  const shown = (el) => { if (!el) return false; const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 50 && r.height > 50 && r.right > 0 && r.left < innerWidth && s.visibility !== 'hidden'
      && s.display !== 'none' && Number(s.opacity) > 0.5; };
  const dialog = document.getElementById(id + '-modal'), sidebar = document.getElementById(id);
  const where = dialog && dialog.open ? dialog : sidebar;
  // what the reader came for: the links (the course's pages, the page's sections) are on the screen
  const links = [...where.querySelectorAll('a')].filter((a) => { const r = a.getBoundingClientRect();
    return r.width > 0 && r.left >= 0 && r.right <= innerWidth && r.top < innerHeight; });
  // between a dialog's close() and its 'close' event the theme has not yet moved the links back home
  const away = !!(dialog && !dialog.open && dialog.children.length);
  return {dialog: !!(dialog && dialog.open), shown: shown(where) && links.length > 0, links: links.length, away};
}"""
CONTROLS = {"☰": (".bd-header-article .primary-toggle", "pst-primary-sidebar"),
            "≡": (".bd-header-article .secondary-toggle", "pst-secondary-sidebar")}


def _state(page, sidebar: str) -> dict:
    return page.evaluate(SHOWN_JS, sidebar)


def _wait_state(page, sidebar: str, shown: bool) -> dict:
    """The sidebar's state once it is ``shown`` (or not) with its links at home, or its state when
    Playwright's default timeout (30 s) ran out. (Polled between the dialog's close and the theme's
    'close' handler, the emptied sidebar reads as hidden; a moment later the links are back and it slides
    out.)"""
    try:
        page.wait_for_function(f"((s) => s.shown === {str(shown).lower()} && !s.away)(({SHOWN_JS})({sidebar!r}))")
    except Exception:  # noqa: BLE001 (playwright's TimeoutError: the state below says what was seen)
        pass
    return _state(page, sidebar)


def test_every_page_has_one_of_each_sidebar_control():
    """pydata-sphinx-theme binds the first `.primary-toggle` / `.secondary-toggle` of the page: a second
    one (0.17's top-bar copies, hidden) leaves the visible one dead (pydata/pydata-sphinx-theme#2451)."""
    counts = {}
    for rel in HEADER_PAGES:
        html = (HTML_DIR / rel).read_text(encoding="utf-8")
        classes = re.findall(r'<button class="([^"]*)"', html)
        primary = sum("primary-toggle" in c.split() for c in classes)
        secondary = sum("secondary-toggle" in c.split() for c in classes)
        if primary != 1 or secondary > 1:
            counts[rel] = {"primary-toggle": primary, "secondary-toggle": secondary}
    assert len(HEADER_PAGES) > 20, f"pages with the article header: {HEADER_PAGES}"
    assert not counts, counts


@pytest.mark.parametrize("width", WIDTHS.values(), ids=WIDTHS.keys())
@pytest.mark.parametrize("rel", NAV_PAGES)
def test_header_controls_open_and_close_what_they_control(site, rel, width):
    """Each visible ☰ / ≡ of the article header, tapped: what it controls opens; then it closes, by a
    tap beside the dialog (below NARROW, where it opens over the page) or on the same control."""
    context, page = _open(site, rel, width)
    problems, pressed = [], []
    try:
        for name, (selector, sidebar) in CONTROLS.items():
            control = page.locator(selector)
            if not control.count() or not control.is_visible():
                continue
            pressed.append(name)
            before = _state(page, sidebar)
            narrow = width < NARROW
            if narrow and before["shown"]:
                problems.append(f"{name}: its sidebar shows before the tap: {before}")
                continue
            _press(page, control, width)
            after = _wait_state(page, sidebar, shown=not before["shown"])
            if after["shown"] == before["shown"] or (narrow and not after["dialog"]):
                problems.append(f"{name}: the tap changed nothing: before {before}, after {after}")
                continue
            if narrow:  # the dialog covers the control: a tap on the dimmed page beside it closes it
                page.touchscreen.tap(width - 10 if sidebar == "pst-primary-sidebar" else 10, HEIGHT / 2)
            else:
                _press(page, control, width)
            closed = _wait_state(page, sidebar, shown=before["shown"])
            if closed["shown"] != before["shown"] or closed["dialog"] or closed["away"]:
                problems.append(f"{name}: did not close again: {closed}")
    finally:
        context.close()
    expected = ["☰", "≡"] if width < NARROW else ["☰"]
    assert pressed == expected, f"visible header controls {pressed}, expected {expected}"
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- 2. search

VISIBLE_SEARCH_FIELDS_JS = """() => [...document.querySelectorAll('.search-button-field, form.bd-search')]
  .filter((n) => n.getClientRects().length && getComputedStyle(n).visibility !== 'hidden' && !n.closest('dialog'))
  .map((n) => { const r = n.getBoundingClientRect(); return [n.className, Math.round(r.left), Math.round(r.top)]; })"""


def test_a_desktop_reader_sees_one_search_field(site):
    context, page = _open(site, "book/intro.html", WIDTHS["desktop"])
    try:
        fields = page.evaluate(VISIBLE_SEARCH_FIELDS_JS)
    finally:
        context.close()
    assert len(fields) == 1, f"search fields on the screen (class, left, top): {fields}"


# Where the typed text starts in the field (its content box) and where the magnifier beside it ends.
TYPED_TEXT_JS = """() => {
  const input = document.querySelector('.bd-search-container form.bd-search input');
  const icon = input.parentElement.querySelector('i.fa-magnifying-glass');
  const s = getComputedStyle(input), r = input.getBoundingClientRect(), i = icon.getBoundingClientRect();
  return {value: input.value, textLeft: r.left + parseFloat(s.borderLeftWidth) + parseFloat(s.paddingLeft),
          iconLeft: i.left, iconRight: i.right, iconWidth: i.width};
}"""


@pytest.mark.parametrize("width", [WIDTHS["phone"], WIDTHS["desktop"]], ids=["phone", "desktop"])
def test_the_search_pages_magnifier_leaves_the_typed_text_clear(site, width):
    context, page = _open(site, "search.html", width)
    try:
        field = page.locator(".bd-search-container form.bd-search input")
        _press(page, field, width)
        page.keyboard.type("atenção")
        facts = page.evaluate(TYPED_TEXT_JS)
    finally:
        context.close()
    assert facts["value"] == "atenção" and facts["iconWidth"] > 0, facts
    assert facts["iconRight"] <= facts["textLeft"], (
        f"the magnifier ends at {facts['iconRight']:.1f} px, the typed text starts at {facts['textLeft']:.1f} px")


# --------------------------------------------------------------------------- 3. the run menu

# The phone header's visible controls, with what each one's name is and whether it shows text.
HEADER_CONTROLS_JS = """() => [...document.querySelectorAll('.bd-header-article a, .bd-header-article button')]
  .filter((n) => n.getClientRects().length && getComputedStyle(n).visibility !== 'hidden' && !n.closest('.dropdown-menu'))
  .map((n) => ({name: (n.getAttribute('aria-label') || n.innerText || '').trim(), text: n.innerText.trim(),
                href: n.getAttribute('href') || '',
                menu: [...(n.closest('.dropdown') ? n.closest('.dropdown').querySelectorAll('.dropdown-menu a') : [])]
                        .map((a) => a.getAttribute('href'))}))"""
RUNS = {"lite": "/lite/notebooks/", "binder": "https://mybinder.org/"}


def _runs(control) -> set[str]:
    """The ways to run the page that a header control offers (itself a link, or the links of its menu)."""
    hrefs = [control["href"], *control["menu"]]
    return {way for way, mark in RUNS.items() for h in hrefs if mark in h or (way == "lite" and h.startswith("../../lite/"))}


def test_the_phone_header_has_one_run_menu_named_by_its_text(site):
    """One control runs the page, named by what it shows ("Executar"); tapped, it offers both ways."""
    context, page = _open(site, EX1, WIDTHS["phone"])
    try:
        controls = page.evaluate(HEADER_CONTROLS_JS)
        runners = [c for c in controls if _runs(c)]
        assert len(runners) == 1, f"header controls that run the page: {runners}"
        (runner,) = runners
        assert runner["text"] == runner["name"] == "Executar", runner
        assert _runs(runner) == set(RUNS), runner
        page.get_by_role("button", name="Executar").tap()
        items = page.locator(".bd-header-article .dropdown-menu.show a")
        items.first.wait_for(state="visible")
        shown = [items.nth(i).inner_text().strip() for i in range(items.count())]
    finally:
        context.close()
    assert shown[0].startswith("Executar no navegador") and any("Binder" in s for s in shown), shown


# --------------------------------------------------------------------------- 4. math read aloud

# Each token of the math as a screen reader gets it (the MathML MathJax keeps for assistive technology).
MATH_TOKENS_JS = """() => [...document.querySelectorAll('mjx-assistive-mml math')].map((m) =>
  [...m.querySelectorAll('mi, mtext, mo, mn')].map((t) => t.textContent))"""
# A lone letter outside ASCII: a word split into tokens ("Aten", "ç", "ã", "o"), read letter by letter.
SPLIT_LETTER = re.compile(r"^[À-ÖØ-öø-ÿ]$")
MATH_PAGES = ["book/aula702/licao.html", "book/aula702/ex2_multi_cabeca.html", "book/atividade4/prova_oral.html"]


@pytest.mark.parametrize("rel", MATH_PAGES)
def test_a_portuguese_word_in_the_math_is_read_as_one_word(site, rel):
    context, page = _open(site, rel, WIDTHS["desktop"])
    try:
        formulas = page.evaluate(MATH_TOKENS_JS)
    finally:
        context.close()
    assert formulas, f"no math on {rel}"
    split = [" ".join(tokens) for tokens in formulas if any(SPLIT_LETTER.match(t) for t in tokens)]
    assert not split, f"formulas whose words are read letter by letter: {split}"


# --------------------------------------------------------------------------- 5. printing

A4_WIDTH = 794  # CSS px of an A4 sheet's width (210 mm at 96 px per inch)
# Every code box of the printed page whose lines run past its right edge (a sheet does not scroll).
CUT_CODE_JS = """() => [...document.querySelectorAll('article pre')]
  .filter((pre) => pre.getClientRects().length && pre.scrollWidth > pre.clientWidth + 1)
  .map((pre) => [pre.scrollWidth - pre.clientWidth, pre.textContent.split('\\n').reduce((a, l) => l.length > a.length ? l : a, '')])"""


def test_printed_code_lines_are_not_cut(site):
    """Every content page printed (print media, an A4 sheet's width): every code line shows whole."""
    assert len(CONTENT_PAGES) > 20, f"content pages: {CONTENT_PAGES}"
    cut = {}
    context = site["browser"].new_context(viewport={"width": A4_WIDTH, "height": 1123}, locale="pt-BR")
    try:
        page = context.new_page()
        page.emulate_media(media="print")
        for rel in CONTENT_PAGES:
            page.goto(site["base"] + rel, wait_until="load")
            page.evaluate("document.fonts.ready")
            if boxes := page.evaluate(CUT_CODE_JS):
                cut[rel] = [f"{px} px hidden: {line.strip()[:60]}" for px, line in boxes[:3]] + [f"({len(boxes)} boxes)"]
    finally:
        context.close()
    assert not cut, cut

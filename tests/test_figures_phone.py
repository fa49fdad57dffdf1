"""Figures and tables as a phone reader sees them (390 px wide, headless Debian Chromium).

A figure's text is measured, not guessed: the smallest font of the site's matplotlib style
(``attn.plotting.STYLE``, in points), the PNG's resolution (its ``pHYs`` chunk, else the style's
dpi) and the width the browser gives the image against its natural width::

    text px on screen = font pt × dpi / 72 × rendered width / natural width

Tables: every pandas table wider than its box must scroll inside that box and say so (headless
Chromium hides scrollbars, and phones show theirs only while scrolling): the box's right edge fades
out (its computed ``mask-image``, tools/static/site-a11y.css) at scroll start, so no number is cut at
the page's edge without a cue. No cell prints a decimal point (the site writes ``0,5065``).

The site is served from ``SITE_HTML_DIR`` (default ``_build/html``) under its GitHub Pages
project path (``site-identity.json``) by tests/helpers.py's server; screenshots of the pages
measured go to ``screenshots/phone-figures/`` next to the HTML directory.
"""

from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path

import matplotlib as mpl
import pytest
from helpers import HTML_DIR, PREFIX, full_page_shot, launch_chromium, serve_site
from matplotlib.font_manager import FontProperties

from attn.plotting import STYLE

pytestmark = pytest.mark.site

SHOT_DIR = HTML_DIR.parent / "screenshots" / "phone-figures"
PHONE = {"width": 390, "height": 844}
MIN_TEXT_PX = 9.0  # about the smallest text a reader can read on a phone held at arm's length
TEXT_SIZE_KEYS = ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
                  "legend.fontsize")


def smallest_style_font_pt() -> float:
    """The smallest text size the site's style gives a figure (tick labels, legends, titles), in pt."""
    with mpl.rc_context(STYLE):
        return min(FontProperties(size=mpl.rcParams[k]).get_size_in_points() for k in TEXT_SIZE_KEYS)


def png_dpi(path: Path) -> float:
    """The resolution a PNG records (matplotlib writes its dpi in ``pHYs``), else the style's dpi."""
    data = path.read_bytes()
    at = data.find(b"pHYs")
    if at < 0:
        return float(STYLE["figure.dpi"])
    x_per_unit, _, unit = struct.unpack(">IIB", data[at + 4:at + 13])
    return x_per_unit * 0.0254 if unit == 1 else float(STYLE["figure.dpi"])


def content_pages() -> list[str]:
    return sorted(p.relative_to(HTML_DIR).as_posix() for p in (HTML_DIR / "book").rglob("*.html"))


# Images in figures and cell outputs (the PNGs pages draw), and every pandas table's layout.
MEASURE_JS = r"""async () => {
  for (const i of document.images) { if (i.loading === 'lazy') i.loading = 'eager'; }
  await Promise.all([...document.images].filter((i) => !i.complete)
      .map((i) => new Promise((r) => { i.addEventListener('load', r); i.addEventListener('error', r); })));
  const label = (el) => {
    const fig = el.closest('figure');
    const cap = fig && fig.querySelector('figcaption .caption-number');
    return cap ? cap.textContent.trim() : (el.closest('[id]') || {}).id || '';
  };
  const imgs = [...document.querySelectorAll('article img')]
    .filter((i) => i.closest('figure, .cell_output') && /\.png($|\?)/.test(i.currentSrc || i.src))
    .map((i) => ({src: new URL(i.currentSrc || i.src).pathname, natural: i.naturalWidth,
                  rendered: i.getBoundingClientRect().width, label: label(i)}));
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const tables = [...document.querySelectorAll('article table.dataframe')].map((t) => {
    let box = t.parentElement;
    while (box && box.tagName !== 'ARTICLE' && !scrolls(box)) box = box.parentElement;
    const article = document.querySelector('article').getBoundingClientRect();
    const cells = [...t.querySelectorAll('td, th')];
    const clipped = box && scrolls(box) ? [] : cells.filter((c) => c.getBoundingClientRect().right > article.right + 1)
        .map((c) => c.textContent.trim());
    return {
      label: label(t), width: t.getBoundingClientRect().width,
      scrolls: !!box && scrolls(box) && box.scrollWidth > box.clientWidth + 1,
      // the cue at scroll start: how far the box's right edge fades out (its mask's last opaque stop)
      fadeRightPx: box && scrolls(box) ? Number((/calc\(100% - ([\d.]+)px\), rgba\(0, 0, 0, 0\)\)$/
          .exec(getComputedStyle(box).maskImage) || [0, 0])[1]) : 0,
      clipped,
      pointNumbers: cells.map((c) => c.textContent.trim()).filter((s) => /^[−-]?\d+\.\d+(e[+-]?\d+)?$/.test(s)
          && !/^[−-]?[1-9]\d{0,2}(\.\d{3})+$/.test(s)),  // 1.234 is a grouped thousand in pt-BR
    };
  });
  return {imgs, tables};
}"""


@pytest.fixture(scope="module")
def phone_pages():
    """Every content page at 390 px: its figures' and tables' measurements, and a screenshot."""
    if not (HTML_DIR / "index.html").is_file():
        pytest.fail(f"no built site in {HTML_DIR}: run `make book` (or set SITE_HTML_DIR)")
    SHOT_DIR.mkdir(parents=True, exist_ok=True)

    async def run(base):
        from playwright.async_api import async_playwright

        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            context = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, locale="pt-BR")
            found = {}
            for rel in content_pages():
                page = await context.new_page()
                await page.goto(base + rel, wait_until="load")
                found[rel] = await page.evaluate(MEASURE_JS)
                if found[rel]["imgs"] or found[rel]["tables"]:
                    await full_page_shot(page, SHOT_DIR / (rel.replace("/", "__") + ".jpg"), type="jpeg", quality=60)
                await page.close()
            await browser.close()
            return found

    with serve_site() as base:
        yield asyncio.run(run(base))


def figure_text_px(img: dict, font_pt: float) -> float:
    png = HTML_DIR / img["src"][len(PREFIX):]
    return font_pt * png_dpi(png) / 72 * img["rendered"] / img["natural"]


def test_figure_text_is_readable_on_a_phone(phone_pages):
    font_pt = smallest_style_font_pt()
    small, report = [], {}
    for rel, found in phone_pages.items():
        sizes = [(figure_text_px(img, font_pt), img) for img in found["imgs"] if img["natural"]]
        if sizes:
            report[rel] = round(min(px for px, _ in sizes), 1)
        small += [f"{rel} {img['label'] or img['src']}: {px:.1f} px ({img['rendered']:.0f} of {img['natural']} px)"
                  for px, img in sizes if px < MIN_TEXT_PX]
    print("smallest figure text at 390 px, per page:", json.dumps(report, indent=1))
    assert report, "no figure was measured"
    assert not small, f"figure text below {MIN_TEXT_PX} CSS px at 390 px ({font_pt:g} pt):\n" + "\n".join(small)


def test_wide_tables_scroll_visibly_and_cut_no_number(phone_pages):
    bad = []
    for rel, found in phone_pages.items():
        for t in found["tables"]:
            if t["clipped"]:
                bad.append(f"{rel} {t['label']}: cells cut at the page's edge without scrolling: {t['clipped'][:4]}")
            elif t["scrolls"] and t["fadeRightPx"] < 8:
                bad.append(f"{rel} {t['label']}: {t['width']:.0f} px wide table scrolls with no cue (its box's "
                           f"right edge does not fade out)")
    assert not bad, "\n".join(bad)


def test_table_numbers_use_the_decimal_comma(phone_pages):
    bad = [f"{rel} {t['label']}: {t['pointNumbers'][:3]}"
           for rel, found in phone_pages.items() for t in found["tables"] if t["pointNumbers"]]
    assert not bad, "table cells with a decimal point (the site writes 0,5065):\n" + "\n".join(bad)


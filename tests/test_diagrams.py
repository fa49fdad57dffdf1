"""The schematic diagrams (attn.diagrams): each draws, its labels are there and legible, nothing
collides, and each of the five pages shows its diagram with Portuguese alt text in the built site.

The geometry checks work on the drawn figure (display coordinates after a draw): no two labels
overlap, every label stays inside the figure and inside the box it sits in, no arrow runs through
a label or through a box it does not start or end at, and no two boxes overlap.
"""
from __future__ import annotations

import itertools
import pathlib
import re
from html.parser import HTMLParser

import numpy as np
import pytest
import yaml
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from attn import diagrams

ROOT = pathlib.Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"

# diagram function -> (page source, figure name on the page, labels that must be drawn)
DIAGRAMS = {
    "bahdanau_step": ("book/aula510/licao.md", "fig-l510-passo-bahdanau",
                      ["$h_1$", "$h_T$", "$s_{t-1}$", "$s_t$", "GRU", r"$\alpha_{t,1}$", "$e_{t,1}$",
                       "softmax sobre as posições $i$", "vetor de\ncontexto"]),
    "qkv_projection": ("book/aula702/licao.md", "fig-l702-qkv",
                       ["$x_i$", "$W_q$", "$W_k$", "$W_v$", "$q_i$", "$k_i$", "$v_i$", "cat $q_2$", "$k_6$",
                        "softmax\nde cada linha"]),
    "multihead": ("book/atividade4/ex2_multi_cabeca.md", "fig-ex2-diagrama",
                  ["$Q W_Q^1$", "$V W_V^h$", "Atenção\n(Exercício 1)"]),
    "encoder_block": ("book/atividade4/ex3_bloco_encoder.md", "fig-ex3-diagrama",
                      ["Atenção multicabeça\n(Exercício 2)", "Normalização de camada", "+", "conexão\nresidual"]),
    "copy_task": ("book/aula510/ex3_copia_gru.md", "fig-cp-diagrama",
                  ["$h_4$", "$s_1$", "$x_1$", "$y_4$", "gargalo", "codificador", "decodificador"]),
}
TOLERANCE = 1.0  # pixels


def _draw(name):
    fig = getattr(diagrams, name)()
    FigureCanvasAgg(fig).draw()   # a real renderer, so text extents are measured
    return fig


def _texts(fig):
    return [t for t in fig.axes[0].texts if t.get_text().strip()]


def _boxes(fig):
    return [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)]


def _arrows(fig):
    return [p for p in fig.axes[0].patches if isinstance(p, FancyArrowPatch)]


def _shrunk(bbox, by=TOLERANCE):
    return bbox.expanded(1, 1).padded(-by)


def _contains(outer, inner, slack=TOLERANCE):
    return (inner.x0 >= outer.x0 - slack and inner.x1 <= outer.x1 + slack
            and inner.y0 >= outer.y0 - slack and inner.y1 <= outer.y1 + slack)


def _arrow_points(arrow, ax, step=2.0):
    """Points every ~``step`` pixels along the arrow's drawn path (shaft and head)."""
    path = ax.transData.transform_path(arrow.get_path())
    points = []
    for poly in path.to_polygons(closed_only=False):
        for a, b in itertools.pairwise(poly):
            n = max(2, int(np.hypot(*(b - a)) / step))
            points.extend(a + (b - a) * k / n for k in range(n + 1))
    return np.array(points)


@pytest.mark.parametrize("name", DIAGRAMS)
def test_returns_a_figure_that_fits_a_page(name):
    fig = getattr(diagrams, name)()
    assert isinstance(fig, Figure)
    width, height = fig.get_size_inches()
    assert 4.5 <= width <= 6.0 and height <= 8.5, "narrow enough to stay legible on a phone"
    assert fig.get_facecolor()[:3] == (1.0, 1.0, 1.0), "white background (the site's dark mode keeps it)"


@pytest.mark.parametrize("name", DIAGRAMS)
def test_labels_are_drawn_in_portuguese_with_the_page_symbols(name):
    texts = {t.get_text() for t in _texts(_draw(name))}
    missing = [label for label in DIAGRAMS[name][2] if label not in texts]
    assert not missing, f"{name}: labels not drawn: {missing}"
    english = {"encoder", "decoder", "weights", "scores", "heads", "output", "input", "layer"}
    words = {w.lower() for t in texts for w in re.findall(r"[A-Za-zÀ-ÿ]+", re.sub(r"\$[^$]*\$", "", t))}
    assert not words & english, f"{name}: English labels {words & english}"


@pytest.mark.parametrize("name", DIAGRAMS)
def test_text_is_large_enough(name):
    sizes = [t.get_fontsize() for t in _texts(_draw(name))]
    assert min(sizes) >= 9.5


@pytest.mark.parametrize("name", DIAGRAMS)
def test_no_two_labels_overlap_and_all_stay_inside(name):
    fig = _draw(name)
    renderer = fig.canvas.get_renderer()
    extents = [(t.get_text(), t.get_window_extent(renderer)) for t in _texts(fig)]
    frame = fig.bbox
    outside = [s for s, bb in extents if not _contains(frame, bb)]
    assert not outside, f"{name}: labels leave the figure: {outside}"
    clashes = [(a, b) for (a, ba), (b, bb) in itertools.combinations(extents, 2)
               if _shrunk(ba).overlaps(_shrunk(bb))]
    assert not clashes, f"{name}: overlapping labels: {clashes}"


@pytest.mark.parametrize("name", DIAGRAMS)
def test_labels_fit_inside_their_boxes(name):
    fig = _draw(name)
    renderer = fig.canvas.get_renderer()
    boxes = [b.get_window_extent(renderer) for b in _boxes(fig)]
    bad = []
    for t in _texts(fig):
        bb = t.get_window_extent(renderer)
        cx, cy = (bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2
        for box in boxes:
            if box.contains(cx, cy) and not _contains(box, bb, slack=0.0):
                bad.append(t.get_text())
    assert not bad, f"{name}: labels spill out of their boxes: {bad}"


@pytest.mark.parametrize("name", DIAGRAMS)
def test_boxes_do_not_overlap(name):
    fig = _draw(name)
    renderer = fig.canvas.get_renderer()
    boxes = [b.get_window_extent(renderer) for b in _boxes(fig)]
    clashes = [(i, j) for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2)
               if _shrunk(a, 2.0).overlaps(_shrunk(b, 2.0))]
    assert not clashes, f"{name}: overlapping boxes {clashes}"


@pytest.mark.parametrize("name", DIAGRAMS)
def test_arrows_cross_no_label_and_no_box(name):
    fig = _draw(name)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    labels = [(t.get_text(), _shrunk(t.get_window_extent(renderer), 1.5)) for t in _texts(fig)]
    boxes = [_shrunk(b.get_window_extent(renderer), 3.0) for b in _boxes(fig)]
    bad = []
    for k, arrow in enumerate(_arrows(fig)):
        pts = _arrow_points(arrow, ax)
        for text, bb in labels:
            if any(bb.contains(x, y) for x, y in pts):
                bad.append(f"arrow {k} crosses label {text!r}")
        for j, bb in enumerate(boxes):
            if any(bb.contains(x, y) for x, y in pts):
                bad.append(f"arrow {k} enters box {j}")
    assert not bad, f"{name}: {bad}"


def test_svg_output_is_reproducible():
    a = diagrams.svg(diagrams.encoder_block()).data
    b = diagrams.svg(diagrams.encoder_block()).data
    assert a == b and a.lstrip().startswith("<svg") and "<text" not in a  # text drawn as paths


@pytest.mark.parametrize(("call", "message"), [
    (lambda: diagrams.qkv_projection(["só um"]), "tokens"),
    (lambda: diagrams.multihead(h_shown=5), "h_shown"),
    (lambda: diagrams.copy_task(T=9), "T"),
])
def test_arguments_are_validated(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --------------------------------------------------------------------------- the built site


class _Figures(HTMLParser):
    """Collect each <figure id=...>: the <img> inside it (src, alt)."""

    def __init__(self):
        super().__init__()
        self.figures: dict[str, list[dict]] = {}
        self._stack: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "figure":
            self._stack.append(attrs.get("id"))
            if attrs.get("id"):
                self.figures[attrs["id"]] = []
        elif tag == "img" and self._stack and self._stack[-1]:
            self.figures[self._stack[-1]].append(attrs)

    def handle_endtag(self, tag):
        if tag == "figure" and self._stack:
            self._stack.pop()


def _diagram_cell(page: pathlib.Path, name: str) -> tuple[dict, str]:
    """The options (parsed YAML) and the code of the page's cell that makes figure ``name``."""
    text = page.read_text(encoding="utf-8")
    cells = re.findall(r"```\{code-cell\}[^\n]*\n---\n(.*?)\n---\n(.*?)```", text, re.S)
    found = [(yaml.safe_load(opts), code) for opts, code in cells if f"name: {name}" in opts]
    assert len(found) == 1, f"{page}: expected one cell making figure {name}, found {len(found)}"
    return found[0]


@pytest.mark.parametrize("name", DIAGRAMS)
def test_page_draws_the_diagram_in_one_hidden_numbered_cell(name):
    page, fig_name, _ = DIAGRAMS[name]
    options, code = _diagram_cell(ROOT / page, fig_name)
    assert re.search(rf"\bsvg\({name}\(", code), f"the cell must display svg({name}(...))"
    assert "hide-input" in options["tags"]
    assert options["mystnb"]["figure"]["caption"].strip()
    assert options["mystnb"]["image"]["alt"].strip()
    assert f"{{numref}}`{fig_name}`" in (ROOT / page).read_text(encoding="utf-8"), "the text cites the figure"


@pytest.mark.parametrize("name", DIAGRAMS)
def test_built_page_shows_the_diagram_with_portuguese_alt_text(name):
    page, fig_name, _ = DIAGRAMS[name]
    html_page = HTML / pathlib.Path(page).with_suffix(".html")
    if not html_page.is_file():
        pytest.fail(f"{html_page} missing: run `make book` first")
    parser = _Figures()
    parser.feed(html_page.read_text(encoding="utf-8"))
    assert fig_name in parser.figures, f"{html_page.name} has no <figure id={fig_name!r}>"
    imgs = parser.figures[fig_name]
    assert len(imgs) == 1, imgs
    img = imgs[0]
    assert img["src"].endswith(".svg")
    assert (html_page.parent / img["src"]).resolve().is_file(), img["src"]
    alt = img.get("alt", "")
    assert alt == _diagram_cell(ROOT / page, fig_name)[0]["mystnb"]["image"]["alt"].strip()
    words = re.findall(r"\w+", alt.lower())
    assert len(words) >= 12, "the alt text describes the diagram"
    assert {"de", "do", "da", "e", "com", "cada"} & set(words), "alt text in Portuguese"
    assert not {"of", "and", "with", "each"} & set(words), "no English in the alt text (tokens like The are data)"

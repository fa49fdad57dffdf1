"""Tests of attn.plotting: the ASCII heatmap (exact text) and the matplotlib heatmap helper."""
import re

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attn
from attn.plotting import ASCII_SHADES


# -- ascii_heatmap -------------------------------------------------------------------------------
def test_ascii_exact_text_by_hand():
    # max = 1 -> levels rint(w * 9): 0 -> 0 ' ', 1 -> 9 '@', .5 -> 4.5 -> 4 '=' (ties to even), .25 -> 2 ':'
    text = attn.ascii_heatmap(np.array([[0.0, 1.0], [0.5, 0.25]]), ["a", "bb"])
    assert text == "    a bb\n a    @@\nbb == ::"


def test_ascii_shades_scale_to_matrix_maximum_not_to_one():
    w = np.array([[0.1, 0.2], [0.2, 0.1]])  # max 0.2 -> full shade, 0.1 -> rint(4.5) = 4
    lines = attn.ascii_heatmap(w, ["x", "y"], shades=" .:-=+*#%@").split("\n")
    assert lines[1] == "x == @@" and lines[2] == "y @@ =="
    # same picture after multiplying by any positive constant
    assert attn.ascii_heatmap(w * 3.7, ["x", "y"]) == attn.ascii_heatmap(w, ["x", "y"])


def test_ascii_custom_shades_and_rectangular_labels():
    text = attn.ascii_heatmap([[0.0, 0.5, 1.0]], ["q"], ["k1", "k2", "k3"], shades=" ░▒▓█")
    # levels: 0, rint(2.0) = 2, 4
    assert text == "  k1 k2 k3\nq    ▒▒ ██"


def test_ascii_all_zero_matrix_is_blank_not_nan():
    text = attn.ascii_heatmap(np.zeros((2, 2)), ["a", "b"], shades="_#")
    assert text == "   a  b\na __ __\nb __ __"


def test_ascii_cell_width():
    text = attn.ascii_heatmap([[1.0]], ["a"], cell_width=4)
    assert text == "    a\na  @@"


def test_ascii_lesson_sentence_shape():
    tokens = ["The", "cat", "sat", "on", "the", "mat"]
    _, w = attn.SelfAttention(8, 4, 4, rng=42).forward(np.random.default_rng(42).normal(size=(6, 8)))
    lines = attn.ascii_heatmap(w, tokens).split("\n")
    assert len(lines) == 7
    assert lines[0] == "    The cat sat  on the mat"
    assert all(len(line) == len(lines[0]) for line in lines)
    # the largest weight gets the darkest shade
    i, j = np.unravel_index(np.argmax(w), w.shape)
    assert lines[1 + i][3 + 4 * j + 2:3 + 4 * j + 4] == ASCII_SHADES[-1] * 2


@settings(max_examples=50)
@given(w=arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 5)),
                elements=st.floats(0, 10, allow_nan=False, allow_infinity=False)))
def test_ascii_levels_are_monotone_in_the_value(w):
    rows = [f"r{i}" for i in range(w.shape[0])]
    cols = [f"c{j}" for j in range(w.shape[1])]
    lines = attn.ascii_heatmap(w, rows, cols).split("\n")[1:]
    level = np.array([[ASCII_SHADES.index(line[2 + 3 * j + 1]) for j in range(w.shape[1])] for line in lines])
    order = np.argsort(w, axis=None, kind="stable")
    assert np.all(np.diff(level.ravel()[order]) >= 0)
    if w.max() > 0:
        assert level.ravel()[np.argmax(w)] == len(ASCII_SHADES) - 1


def test_ascii_refuses_negative_values():
    with pytest.raises(ValueError, match=r"weights with shape \(1, 2\) has negative entries \(min -0\.5\); "
                                         r"expected non-negative values"):
        attn.ascii_heatmap([[0.1, -0.5]], ["a"], ["x", "y"])


def test_ascii_refuses_1d():
    with pytest.raises(ValueError, match=r"weights has shape \(3,\) \(1 dimensions\); expected \(n_rows, n_cols\)"):
        attn.ascii_heatmap([0.1, 0.2, 0.7], ["a", "b", "c"])


def test_ascii_refuses_nan():
    with pytest.raises(ValueError, match=r"weights with shape \(1, 1\) contains NaN or inf"):
        attn.ascii_heatmap([[np.nan]], ["a"])


def test_ascii_row_labels_length():
    with pytest.raises(ValueError, match=r"row_labels has length 1; expected 2 to match weights of shape \(2, 2\)"):
        attn.ascii_heatmap(np.eye(2), ["a"], ["x", "y"])


def test_ascii_default_col_labels_need_square_matrix():
    with pytest.raises(ValueError, match=r"col_labels has length 2; expected 3 to match weights of shape \(2, 3\)"):
        attn.ascii_heatmap(np.ones((2, 3)), ["a", "b"])


def test_ascii_shades_too_short():
    with pytest.raises(ValueError, match=r"shades must have at least 2 characters, got '#'"):
        attn.ascii_heatmap(np.eye(2), ["a", "b"], shades="#")


def test_ascii_cell_width_too_small():
    with pytest.raises(ValueError, match=r"cell_width must be an integer >= 2, got 1"):
        attn.ascii_heatmap(np.eye(2), ["a", "b"], cell_width=1)


# -- heatmap (matplotlib) ----------------------------------------------------------------------------
def test_heatmap_draws_labels_and_annotations():
    fig, ax = attn.heatmap(np.array([[0.25, 0.75]]), ["q"], ["k1", "k2"], title="título", xlabel="chave")
    try:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["k1", "k2"]
        assert [t.get_text() for t in ax.texts] == ["0,25", "0,75"]  # decimal comma, as in prose
        assert ax.get_title() == "título" and ax.get_xlabel() == "chave"
    finally:
        plt.close(fig)


def test_heatmap_label_length_error():
    with pytest.raises(ValueError, match=r"col_labels has length 1; expected 2 to match matrix of shape \(1, 2\)"):
        attn.heatmap(np.array([[0.25, 0.75]]), ["q"], ["k1"])


# -- decimal comma in figures (issue 18, item 26) ------------------------------------------------------
def tick_texts(fig) -> list[str]:
    """Every visible tick label and offset text of a drawn figure (colour bars included)."""
    fig.canvas.draw()
    texts = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            texts += [t.get_text() for t in axis.get_ticklabels() if t.get_visible()]
            texts.append(axis.get_offset_text().get_text())
    return [t for t in texts if t]


def python_decimal_labels(texts) -> list[str]:
    """The labels written in Python's notation (a decimal point between digits)."""
    return [t for t in texts if re.search(r"\d\.\d", t)]


def _figure():
    fig, (ax, heat) = plt.subplots(1, 2)
    ax.plot([0.0, 0.5, 1.0], [-0.61, 0.2, 0.51])
    attn.heatmap(np.array([[0.25, -0.75]]), ["q"], ["k1", "k2"], ax=heat, cmap="RdBu_r")  # + colour bar
    return fig


def test_figure_number_check_can_fail():
    # a fixture drawn with matplotlib's own formatter: the check must see the decimal points
    with plt.rc_context():
        ax = plt.figure().add_subplot()
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.plot([0.0, 0.5, 1.0], [0.0, 0.5, 1.0])
        assert python_decimal_labels(tick_texts(ax.figure)) != []
        plt.close(ax.figure)


def test_use_style_labels_ticks_with_a_decimal_comma():
    attn.use_style()
    fig = _figure()
    try:
        texts = tick_texts(fig)
        assert any("," in t for t in texts), texts
        assert python_decimal_labels(texts) == [], texts
        assert "\u2212" in "".join(texts)  # the typographic minus of negative ticks
        heat = fig.axes[1]
        assert [t.get_text() for t in heat.texts] == ["0,25", "\u22120,75"]
    finally:
        plt.close("all")


def test_use_style_offset_text_and_small_ticks():
    attn.use_style()
    fig, ax = plt.subplots()
    ax.plot([1.0001, 1.0002, 1.0003], [1e-5, 2e-5, 3e-5])
    try:
        assert python_decimal_labels(tick_texts(fig)) == []
    finally:
        plt.close(fig)


@pytest.mark.parametrize(("value", "spec", "text"), [
    (0.514, ".2f", "0,51"), (-0.61, ".2f", "\u22120,61"), (1234.5, ",.1f", "1.234,5"), (-0.001, ".1f", "0,0"),
    (12, "d", "12"),
])
def test_number_for_figure_text(value, spec, text):
    assert attn.plotting.number(value, spec) == text


# -- every page that draws a figure applies the style (and so the decimal-comma ticks) -----------------
def draws_without_style(source: str) -> bool:
    """True when page source draws with matplotlib (or attn.heatmap) but never calls attn.use_style()."""
    draws = re.search(r"\bplt\.|\.heatmap\(|\bax\.plot\(", source) is not None
    return draws and "attn.use_style()" not in source


def test_every_page_with_figures_uses_the_style():
    import pathlib
    root = pathlib.Path(__file__).resolve().parent.parent
    missing = [str(p.relative_to(root)) for p in sorted((root / "book").rglob("*.md"))
               if draws_without_style(p.read_text(encoding="utf-8"))]
    assert not missing, f"pages that draw figures without attn.use_style(): {missing}"


def test_style_check_can_fail():
    assert draws_without_style("fig, ax = plt.subplots()\nax.plot([1, 2])")
    assert not draws_without_style("attn.use_style()\nfig, ax = plt.subplots()")
    assert not draws_without_style("print(1)")


@pytest.mark.parametrize("n, panel, grid", [(1, (4.5, 3), (1, 1)), (3, (2.5, 2), (2, 2)), (2, (4.5, 3), (2, 1)),
                                            (1, (10.6, 4), (1, 1))])
def test_panels_fit_a_phone_and_stack(n, panel, grid):
    attn.use_style()
    fig, axes = attn.panels(n, panel=panel)
    width, height = fig.get_size_inches()
    assert width <= attn.plotting.max_figure_width() + 1e-9
    assert axes.shape == (n,)
    rows, cols = grid
    assert len(fig.axes) == rows * cols and sum(ax.get_visible() for ax in fig.axes) == n
    scale = min(1.0, attn.plotting.max_figure_width() / panel[0])
    assert (width, height) == pytest.approx((cols * panel[0] * scale, rows * panel[1] * scale))
    # text of font.size pt on the saved image (tight bounding box: the padding on both sides), shrunk to
    # a 342 px phone column, is at least 9 px
    assert plt.rcParams["font.size"] / 72 * 342 / (width + 2 * plt.rcParams["savefig.pad_inches"]) >= 9 - 1e-9
    plt.close(fig)


def test_panels_refuses_no_panels():
    with pytest.raises(ValueError, match="n must be a positive integer"):
        attn.panels(0)

"""Figure helpers shared by every page: one heatmap, one style.

Figures use a white background (legible in the site's dark mode) and the
colour-blind-safe ``viridis`` / ``cividis`` / ``RdBu_r`` colour maps.

Numbers inside figures follow the prose rule (``attn.prose``): decimal comma and the
typographic minus. :func:`use_style` makes every linear axis (colour bars included) label its
ticks with :class:`DecimalCommaFormatter`; text a page writes into a figure (annotations, bar
labels, legends) goes through :func:`number`.
"""
from __future__ import annotations

import math
import sys

import matplotlib.pyplot as plt
import matplotlib.scale
import matplotlib.ticker
import numpy as np

from ._checks import as_float, check_ndim, positive_int
from .prose import fmt, table_number

STYLE = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": 100,
    "font.size": 10,
    "axes.titlesize": 11,
}


class DecimalCommaFormatter(matplotlib.ticker.ScalarFormatter):
    """Matplotlib's default tick formatter with a decimal comma: ``0.5`` is labelled ``0,5``."""

    def __call__(self, x, pos=None):
        return _comma(super().__call__(x, pos))

    def get_offset(self):
        return _comma(super().get_offset())


def _comma(text: str) -> str:
    # a tick label holds no thousands separator, so every point is a decimal point
    return text.replace(".", "{,}" if "$" in text else ",")


_linear_defaults = matplotlib.scale.LinearScale.set_default_locators_and_formatters


def _decimal_comma_defaults(self, axis):
    _linear_defaults(self, axis)
    axis.set_major_formatter(DecimalCommaFormatter())


def number(value, fmt_spec: str = ".2f") -> str:
    """A number written into a figure: ``number(-0.514) == "−0,51"`` (``attn.prose.fmt``)."""
    return fmt(value, fmt_spec)


def use_style() -> None:
    """Apply the site's matplotlib style: white background, readable sizes, decimal-comma ticks.

    Every linear axis created afterwards (colour bars included) labels its ticks with
    :class:`DecimalCommaFormatter`; when the page has imported pandas, its tables print floats
    with the decimal comma (``attn.prose.table_number``). Calling it again changes nothing.
    """
    plt.rcParams.update(STYLE)
    matplotlib.scale.LinearScale.set_default_locators_and_formatters = _decimal_comma_defaults
    pandas = sys.modules.get("pandas")  # a page's tables follow the prose rule too (attn needs no pandas)
    if pandas is not None:
        pandas.set_option("display.float_format", table_number)


def moving_average(x, window: int):
    """Trailing moving average of a training curve, with the step at which each average ends.

    Parameters
    ----------
    x : array_like, shape (n,)
        One value per training step (a loss, a gradient norm).
    window : int
        Number of steps averaged, at most ``n``.

    Returns
    -------
    steps : ndarray of int, shape (n - window + 1,)
        ``window - 1, ..., n - 1``: the last step of each window.
    values : ndarray, shape (n - window + 1,)
        The mean of ``x`` over each window.
    """
    x = check_ndim(as_float(x, "x"), "x", "(n,) with 1 dimension", 1, 1)  # (n,)
    window = positive_int(window, "window")
    values = np.convolve(x, np.ones(window) / window, mode="valid")  # (n - window + 1,)
    return np.arange(len(values)) + window - 1, values


def heatmap(matrix, row_labels=None, col_labels=None, *, ax=None, title=None, xlabel=None, ylabel=None,
            annotate=True, fmt=".2f", cmap="viridis", vmin=None, vmax=None, colorbar_label=None):
    """Draw a 2-D matrix as an annotated heatmap.

    Parameters
    ----------
    matrix : array_like, shape (n_rows, n_cols)
        Values to draw (``-inf`` is not allowed; mask before plotting).
    row_labels : sequence of str, length n_rows, optional
    col_labels : sequence of str, length n_cols, optional
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure is created if omitted.
    title, xlabel, ylabel, colorbar_label : str, optional
        Text shown to the reader (write it in Portuguese).
    annotate : bool
        Write each cell's value with format ``fmt`` and a decimal comma
        (:func:`number`), in black or white depending on the cell's brightness.
    cmap : str
        A colour-blind-safe map (``viridis``, ``cividis``, ``RdBu_r``...).
    vmin, vmax : float, optional
        Colour limits (default: the data's range).

    Returns
    -------
    fig : matplotlib Figure
    ax : matplotlib Axes
    """
    m = as_float(matrix, "matrix")
    check_ndim(m, "matrix", "(n_rows, n_cols) with 2 dimensions", 2, 2)
    for name, labels, n in (("row_labels", row_labels, m.shape[0]), ("col_labels", col_labels, m.shape[1])):
        if labels is not None and len(labels) != n:
            raise ValueError(
                f"{name} has length {len(labels)}; expected {n} to match matrix of shape {m.shape}"
            )
    if ax is None:
        longest = max((len(str(c)) for c in (col_labels if col_labels is not None else [""])), default=0)
        cell_w = max(0.6, 0.09 * longest + 0.25)  # inches per column: room for the column labels
        size = (min(max_figure_width(), 2.4 + cell_w * m.shape[1]), min(7.0, 1.4 + 0.5 * m.shape[0]))
        fig, ax = plt.subplots(figsize=size, layout="constrained", facecolor="white")
    else:
        fig = ax.figure
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    cbar = fig.colorbar(im, ax=ax, shrink=0.9)
    if colorbar_label:
        cbar.set_label(colorbar_label)
    ax.set_xticks(np.arange(m.shape[1]), labels=col_labels if col_labels is not None else range(m.shape[1]))
    ax.set_yticks(np.arange(m.shape[0]), labels=row_labels if row_labels is not None else range(m.shape[0]))
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if annotate:
        norm = im.norm
        for (i, j), value in np.ndenumerate(m):
            rgba = im.cmap(norm(value))
            luminance = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2]
            ax.text(j, i, number(value, fmt), ha="center", va="center",
                    color="black" if luminance > 0.5 else "white")
    return fig, ax


# On a 390 px phone the text column is 342 CSS px wide and a figure shrinks to it; its smallest text
# (font.size pt, 1 pt = 1/72 in) stays legible, about 9 CSS px, only if the saved image is at most
# font.size / 72 * 342 / 9 inches wide (5,3 in at 10 pt), whatever its dpi. Notebooks save figures
# with bbox_inches="tight", which adds savefig.pad_inches on each side: the figure is narrower by that.
PHONE_COLUMN_PX = 342
MIN_TEXT_PX = 9


def max_figure_width() -> float:
    """The widest figure, in inches, whose text stays about 9 CSS px on a 390 px phone (5,1 at 10 pt)."""
    saved = plt.rcParams["font.size"] / 72 * PHONE_COLUMN_PX / MIN_TEXT_PX  # widest saved image
    return saved - 2 * plt.rcParams["savefig.pad_inches"]


def panels(n: int, panel=(4.5, 3.2), **subplots_kw):
    """A figure of ``n`` panels as wide as a phone allows: as many per row as fit, the rest below.

    Parameters
    ----------
    n : int
        Number of panels (axes), at least 1.
    panel : (width, height) in inches
        Size of one panel; scaled down, keeping its shape, if wider than :func:`max_figure_width`.
    **subplots_kw
        Passed to ``plt.subplots`` (e.g. ``sharey=True``); the layout is ``"constrained"``.

    Returns
    -------
    fig : matplotlib Figure
    axes : ndarray of Axes, shape (n,)
        The panels in reading order (left to right, then top to bottom); unused grid cells are hidden.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    width, height = panel
    limit = max_figure_width()
    if width > limit:
        width, height = limit, height * limit / width
    cols = max(1, min(n, int(limit // width)))
    rows = math.ceil(n / cols)
    fig, grid = plt.subplots(rows, cols, figsize=(cols * width, rows * height), layout="constrained",
                             squeeze=False, facecolor="white", **subplots_kw)
    axes = grid.ravel()  # (rows * cols,)
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


ASCII_SHADES = " .:-=+*#%@"


def ascii_heatmap(weights, row_labels, col_labels=None, *, shades=ASCII_SHADES, cell_width=None):
    r"""Render a non-negative matrix as text, one shade character per cell.

    The quick terminal view of an attention matrix: each cell gets the shade
    whose index is proportional to the cell's value divided by the
    **largest value in the matrix**,

    .. math:: \ell_{ij} = \operatorname{round}\!\left(
              \frac{w_{ij}}{\max_{a,b} w_{ab}} \, (L - 1)\right),

    where ``L = len(shades)`` (ties round to even); the maximum gets ``shades[-1]`` and 0 gets
    ``shades[0]``. An all-zero matrix is drawn entirely with ``shades[0]``.

    Parameters
    ----------
    weights : array_like, shape (n_rows, n_cols)
        Non-negative, finite values (e.g. attention weights).
    row_labels : sequence of str, length n_rows
        Labels written on the left of each row.
    col_labels : sequence of str, length n_cols, optional
        Column headers; defaults to ``row_labels`` (self-attention, square
        matrix).
    shades : str
        At least two characters, from lightest (0) to darkest (the maximum).
    cell_width : int, optional
        Width of each column (at least 2); defaults to the longest column
        label plus one, and at least 3. Each cell is the shade character written twice,
        right-aligned under its label.

    Returns
    -------
    str
        ``n_rows + 1`` lines (header, then one line per row) joined by
        ``"\n"``, without a trailing newline.

    Raises
    ------
    ValueError
        If ``weights`` is not 2-D, holds negative values, NaN or inf, or a
        label list has the wrong length.
    """
    w = as_float(weights, "weights")
    check_ndim(w, "weights", "(n_rows, n_cols) with 2 dimensions", 2, 2)
    if (w < 0).any():
        raise ValueError(
            f"weights with shape {w.shape} has negative entries "
            f"(min {w.min():g}); expected non-negative values"
        )
    col_labels = row_labels if col_labels is None else col_labels
    for name, labels, n in (("row_labels", row_labels, w.shape[0]), ("col_labels", col_labels, w.shape[1])):
        if len(labels) != n:
            raise ValueError(
                f"{name} has length {len(labels)}; expected {n} to match weights "
                f"of shape {w.shape}"
            )
    if len(shades) < 2:
        raise ValueError(f"shades must have at least 2 characters, got {shades!r}")
    row_labels = [str(s) for s in row_labels]
    col_labels = [str(s) for s in col_labels]
    width = cell_width if cell_width is not None else max(3, 1 + max(len(s) for s in col_labels))
    if int(width) != width or width < 2:
        raise ValueError(f"cell_width must be an integer >= 2, got {cell_width!r}")
    width = int(width)
    margin = max(len(s) for s in row_labels)

    top = w.max()
    scaled = w / top if top > 0 else np.zeros_like(w)  # (n_rows, n_cols), in [0, 1]
    levels = np.rint(scaled * (len(shades) - 1)).astype(int)  # (n_rows, n_cols)

    lines = [" " * margin + "".join(s.rjust(width) for s in col_labels)]
    for label, row in zip(row_labels, levels, strict=True):
        cells = "".join((shades[k] * 2).rjust(width) for k in row)
        lines.append(label.rjust(margin) + cells)
    return "\n".join(lines)

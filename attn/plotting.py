"""Figure helpers shared by every page: one heatmap, one style.

Figures use a white background (legible in the site's dark mode) and the
colour-blind-safe ``viridis`` / ``cividis`` / ``RdBu_r`` colour maps.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ._checks import as_float, check_ndim, shape_str

STYLE = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": 100,
    "font.size": 10,
    "axes.titlesize": 11,
}


def use_style() -> None:
    """Apply the site's matplotlib style (white background, readable sizes)."""
    plt.rcParams.update(STYLE)


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
        Write each cell's value with format ``fmt``, in black or white
        depending on the cell's brightness.
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
                f"{name} has length {len(labels)}; expected {n} to match matrix of shape {shape_str(m.shape)}"
            )
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.75 * m.shape[1], 0.8 + 0.6 * m.shape[0]),
                               layout="constrained", facecolor="white")
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
            ax.text(j, i, format(value, fmt), ha="center", va="center", fontsize=9,
                    color="black" if luminance > 0.5 else "white")
    return fig, ax

r"""Schematic diagrams of the course, drawn by code with matplotlib (one function per diagram).

Each public function returns a :class:`matplotlib.figure.Figure` (created without pyplot, so a
notebook shows it exactly once) whose labels are in Portuguese and use the symbols of the page
that shows it. The pages display them as SVG through :func:`svg`, so text stays sharp at any
zoom, on a phone too.

All figures share one drawing helper, :class:`Canvas`: its data units are inches (one unit is one
inch of the figure at any size), boxes are placed by their centre, and arrows join box sides.
The colours are pastel fills of the Okabe-Ito palette (colour-blind safe) with black text, on a
white background, so the figures read the same in the site's light and dark modes; the colours
only repeat what the labels say.

=====================  ======================================  =====================
function               what it draws                           page
=====================  ======================================  =====================
``bahdanau_step``      one decoder step with additive scores   lesson 5.10
``qkv_projection``     Q, K, V per token, the score matrix     lesson 7.02
``multihead``          split into heads, attend, concat, W^O   Activity 4, Ex. 2
``encoder_block``      attention, add & norm, FFN, add & norm  Activity 4, Ex. 3
``copy_task``          the copy task without / with attention  lesson 5.10, Ex. 3
=====================  ======================================  =====================
"""
from __future__ import annotations

import io
from dataclasses import dataclass

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path

# Pastel fills (Okabe-Ito hues lightened) by role; the same role has the same colour in every diagram.
FILL = {
    "query": "#fde3b0",    # queries / decoder states (orange)
    "key": "#cbe6f8",      # keys / encoder states (sky blue)
    "value": "#c4ecdf",    # values (bluish green)
    "weight": "#f5d3e6",   # scores and attention weights (reddish purple)
    "op": "#ececec",       # operations (grey)
    "plain": "#ffffff",    # inputs, outputs, anything else
}
EDGE = "#333333"
NOTE = "#4d4d4d"          # secondary text: dark grey, contrast 8.6:1 on white
FONT = 12
NOTE_FONT = 10.5
TEXT_SCALE = 1.15  # every font size is multiplied by this: the figures shrink to ~360 px on a phone


@dataclass(frozen=True)
class Box:
    """A box placed by its centre ``(x, y)``, width ``w`` and height ``h`` (inches)."""

    x: float
    y: float
    w: float
    h: float

    def left(self, dy: float = 0.0):
        return (self.x - self.w / 2, self.y + dy)

    def right(self, dy: float = 0.0):
        return (self.x + self.w / 2, self.y + dy)

    def top(self, dx: float = 0.0):
        return (self.x + dx, self.y + self.h / 2)

    def bottom(self, dx: float = 0.0):
        return (self.x + dx, self.y - self.h / 2)


class Canvas:
    """A blank figure of ``width`` x ``height`` inches whose data units are inches.

    The one drawing helper of this module: :meth:`box`, :meth:`arrow` (straight or through
    corner points) and :meth:`text`. Use :attr:`fig` when done.
    """

    def __init__(self, width: float, height: float):
        self.fig = Figure(figsize=(width, height), facecolor="white")
        self.ax = self.fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, width)
        self.ax.set_ylim(0, height)
        self.ax.set_axis_off()

    def box(self, x, y, w, h, text="", *, role="op", fontsize=FONT, dashed=False, **text_kw) -> Box:
        """A rounded box centred at ``(x, y)`` with ``text`` in its middle; returns its :class:`Box`."""
        pad = 0.06
        self.ax.add_patch(FancyBboxPatch(
            (x - w / 2 + pad, y - h / 2 + pad), w - 2 * pad, h - 2 * pad,
            boxstyle=f"round,pad={pad}", facecolor=FILL[role], edgecolor=EDGE, linewidth=1.1,
            linestyle=(0, (4, 3)) if dashed else "-", zorder=2))
        if text:
            self.text(x, y, text, fontsize=fontsize, **text_kw)
        return Box(x, y, w, h)

    def text(self, x, y, s, *, fontsize=FONT, color="black", ha="center", va="center", **kw):
        """Free text (a label or a note); notes use ``fontsize=NOTE_FONT, color=NOTE``."""
        return self.ax.text(x, y, s, fontsize=fontsize * TEXT_SCALE, color=color, ha=ha, va=va, zorder=4,
                            linespacing=1.25, **kw)

    def arrow(self, *points, dashed=False, head=True, color=EDGE, width=1.3):
        """An arrow from the first point to the last, through any corner points in between."""
        arrow = FancyArrowPatch(
            path=Path(list(points)), arrowstyle="-|>" if head else "-", mutation_scale=13,
            color=color, linewidth=width, linestyle=(0, (4, 3)) if dashed else "-",
            shrinkA=0, shrinkB=0, zorder=3)
        self.ax.add_patch(arrow)
        return arrow


def svg(fig: Figure):
    """``fig`` as an IPython SVG object (what the pages display); the SVG text is reproducible."""
    from IPython.display import SVG

    buffer = io.StringIO()
    with rc_context({"svg.hashsalt": "attn.diagrams"}):      # fixed ids instead of random ones
        fig.savefig(buffer, format="svg", facecolor="white", metadata={"Date": None})
    return SVG(buffer.getvalue())


# --------------------------------------------------------------------------- lesson 5.10


def bahdanau_step() -> Figure:
    r"""One decoder step of Bahdanau attention (lesson 5.10).

    Encoder states :math:`h_1, \dots, h_T` at the bottom; the previous decoder state
    :math:`s_{t-1}` scores each of them (:math:`e_{t,i}`), a softmax over :math:`i` gives the
    weights :math:`\alpha_{t,i}`, the weighted sum of the :math:`h_i` is the context
    :math:`c_t`, and the GRU turns :math:`[y_{t-1}; c_t]` and :math:`s_{t-1}` into :math:`s_t`.
    """
    c = Canvas(5.8, 7.6)
    cols = [2.05, 2.85, 3.65, 4.8]                   # h_1, h_2, h_3, h_T
    dots = 4.22
    names = ["1", "2", "3", "T"]
    band_l, band_r = 1.65, 5.2
    band_x, band_w = (band_l + band_r) / 2, band_r - band_l
    rows = {"h": 0.55, "score": 1.55, "e": 2.45, "softmax": 3.3, "alpha": 4.15, "ctx": 5.05, "gru": 6.1}
    label_x = 1.5                                     # right edge of the row labels

    def row_label(y, s):
        c.text(label_x, y, s, fontsize=NOTE_FONT, color=NOTE, ha="right")

    # encoder states, joined by the encoder's recurrence
    hs = [c.box(x, rows["h"], 0.62, 0.5, f"$h_{n}$", role="key") for x, n in zip(cols, names, strict=True)]
    for a, b in zip(hs[:2], hs[1:3], strict=True):
        c.arrow(a.right(), b.left())
    c.text(dots, rows["h"], "⋯")
    c.text(band_x, rows["h"] - 0.4, "estados do codificador", fontsize=NOTE_FONT, color=NOTE)

    # scores: one additive score per encoder position
    s_prev = c.box(0.85, rows["score"], 1.0, 0.55, "$s_{t-1}$", role="query")
    c.text(0.85, rows["score"] - 0.5, "estado anterior\ndo decodificador", fontsize=NOTE_FONT, color=NOTE,
           va="top")
    score = c.box(band_x, rows["score"], band_w, 0.6,
                  r"$e_{t,i} = v_a^{\top}\,\tanh(W_a\, s_{t-1} + U_a\, h_i)$", role="op", fontsize=11.5)
    c.arrow(s_prev.right(), score.left())
    for h in hs:
        c.arrow(h.top(), (h.x, score.bottom()[1]))
    es = [c.box(x, rows["e"], 0.62, 0.48, f"$e_{{t,{n}}}$", role="weight")
          for x, n in zip(cols, names, strict=True)]
    for e in es:
        c.arrow((e.x, score.top()[1]), e.bottom())
    c.text(dots, rows["e"], "⋯")
    row_label(rows["e"], "pontuações")

    # softmax over the positions, then the weights
    soft = c.box(band_x, rows["softmax"], band_w, 0.5, "softmax sobre as posições $i$", role="op")
    for e in es:
        c.arrow(e.top(), (e.x, soft.bottom()[1]))
    alphas = [c.box(x, rows["alpha"], 0.62, 0.48, fr"$\alpha_{{t,{n}}}$", role="weight")
              for x, n in zip(cols, names, strict=True)]
    for a in alphas:
        c.arrow((a.x, soft.top()[1]), a.bottom())
    c.text(dots, rows["alpha"], "⋯")
    row_label(rows["alpha"], "pesos de\natenção")

    # context: weighted sum of the encoder states (which reach it along the dashed path)
    ctx = c.box(band_x, rows["ctx"], band_w, 0.55, r"$c_t = \sum_i\, \alpha_{t,i}\, h_i$", role="value")
    for a in alphas:
        c.arrow(a.top(), (a.x, ctx.bottom()[1]))
    c.arrow(hs[-1].right(), (5.45, rows["h"]), (5.45, rows["ctx"]), ctx.right(), dashed=True)
    c.text(5.52, rows["e"], "$h_i$", ha="left", fontsize=NOTE_FONT, color=NOTE)
    row_label(rows["ctx"], "vetor de\ncontexto")

    # the GRU step: s_{t-1} and [y_{t-1}; c_t] give s_t, the query of step t + 1
    gru_x = 2.9
    gru = c.box(gru_x, rows["gru"], 1.2, 0.6, "GRU", role="op")
    c.arrow((gru_x, ctx.top()[1]), gru.bottom())
    c.text(gru_x + 0.08, (ctx.top()[1] + gru.bottom()[1]) / 2, "$c_t$", ha="left", fontsize=NOTE_FONT,
           color=NOTE)
    c.arrow(s_prev.top(dx=-0.35), (0.5, rows["gru"]), gru.left())
    y_prev = c.box(gru_x, 7.2, 1.0, 0.5, "$y_{t-1}$", role="plain")
    c.arrow(y_prev.bottom(), gru.top())
    c.text(gru_x + 0.6, 7.2, "token anterior", fontsize=NOTE_FONT, color=NOTE, ha="left")
    s_t = c.box(4.75, rows["gru"], 0.9, 0.55, "$s_t$", role="query")
    c.arrow(gru.right(), s_t.left())
    c.text(4.75, rows["gru"] + 0.45, "consulta do\npasso $t+1$", fontsize=NOTE_FONT, color=NOTE, va="bottom")
    return c.fig


# --------------------------------------------------------------------------- lesson 7.02


def qkv_projection(tokens=("The", "cat", "sat", "on", "the", "mat")) -> Figure:
    r"""Queries, keys and values from each token, and the score matrix (lesson 7.02).

    Top: the embedding :math:`x_i` of one token goes through :math:`W_q`, :math:`W_k`,
    :math:`W_v` to :math:`q_i`, :math:`k_i`, :math:`v_i`. Bottom: the :math:`n \times n`
    matrix :math:`Q K^\top / \sqrt{d_k}` (row :math:`i`: query :math:`q_i` against every key
    :math:`k_j`; the second row is shaded), then the softmax of each row and the weighted sum of
    the values. ``tokens`` (2 to 8 strings) label the rows.
    """
    tokens = [str(t) for t in tokens]
    n = len(tokens)
    if not 2 <= n <= 8:
        raise ValueError(f"tokens has length {n}; expected 2 to 8 tokens (the grid must stay legible)")
    c = Canvas(5.6, 7.5)

    # top: one token, three projections
    mid = 5.7
    c.text(0.15, 7.2, "Cada token $i$ gera três vetores:", ha="left")
    x_i = c.box(0.6, mid, 0.75, 0.6, "$x_i$", role="plain")
    c.text(0.6, mid - 0.42, "$d_{model}$\nnúmeros", fontsize=NOTE_FONT, color=NOTE, va="top")
    roles = [("q", "query", "o que procuro", "d_k"), ("k", "key", "como me apresento", "d_k"),
             ("v", "value", "o que entrego", "d_v")]
    for (sym, role, question, dim), dy in zip(roles, (0.75, 0.0, -0.75), strict=True):
        y = mid + dy
        w = c.box(1.95, y, 0.8, 0.5, f"$W_{sym}$", role="op")
        c.arrow(x_i.right(), (1.3, y), w.left())
        out = c.box(2.95, y, 0.7, 0.5, f"${sym}_i$", role=role)
        c.arrow(w.right(), out.left())
        c.text(3.42, y, f"“{question}”\n(${dim}$ números)", fontsize=NOTE_FONT, color=NOTE, ha="left")

    # bottom: the score matrix, rows = queries, columns = keys
    cell = 0.36
    gx, gy = 1.25, 1.45                            # lower-left corner of the grid
    top_y = gy + n * cell
    c.text(0.15, top_y + 0.6, "Todas as consultas contra todas as chaves:", ha="left")
    highlighted = 1 if n > 1 else 0
    for i in range(n):
        for j in range(n):
            c.ax.add_patch(FancyBboxPatch(
                (gx + j * cell, gy + (n - 1 - i) * cell), cell, cell, boxstyle="square,pad=0",
                facecolor=FILL["weight"] if i == highlighted else "white", edgecolor="#8c8c8c",
                linewidth=0.8, zorder=2))
    for k, tok in enumerate(tokens):
        c.text(gx - 0.08, gy + (n - 1 - k + 0.5) * cell, f"{tok} $q_{k + 1}$", ha="right", fontsize=NOTE_FONT)
        c.text(gx + (k + 0.5) * cell, top_y + 0.05, f"$k_{k + 1}$", va="bottom", fontsize=NOTE_FONT)
    c.text(gx + n * cell / 2, gy - 0.1, r"$S = Q K^{\top} / \sqrt{d_k}$" + "\n" + r"$(n \times n)$", va="top",
           fontsize=11)

    # pipeline: softmax of each row, weighted sum of the values
    px, pw = 4.55, 1.6
    soft = c.box(px, top_y - 0.1, pw, 0.65, "softmax\nde cada linha", role="op", fontsize=11)
    c.arrow((gx + n * cell, soft.y), soft.left())
    pesos = c.box(px, soft.y - 0.95, pw, 0.5, r"pesos $w_{ij}$", role="weight", fontsize=11)
    c.arrow(soft.bottom(), pesos.top())
    mix = c.box(px, pesos.y - 0.95, pw, 0.6, r"$\sum_j w_{ij}\, v_j$", role="value", fontsize=11)
    c.arrow(pesos.bottom(), mix.top())
    out = c.box(px, mix.y - 0.95, pw, 0.5, r"saída $(n \times d_v)$", role="plain", fontsize=11)
    c.arrow(mix.bottom(), out.top())
    c.text(0.15, 0.3, f"linha destacada: a consulta de “{tokens[highlighted]}” contra cada chave",
           fontsize=NOTE_FONT, color=NOTE, ha="left")
    return c.fig


# --------------------------------------------------------------------------- Activity 4


def multihead(h_shown=2) -> Figure:
    r"""Multi-head attention (Activity 4, Ex. 2): split into heads, attend, concatenate, :math:`W^O`.

    ``h_shown`` heads are drawn (2 or 3; the last is labelled :math:`h`), each with its own
    projections :math:`W_Q^i, W_K^i, W_V^i` to :math:`d_k = d_{model}/h` columns.
    """
    if h_shown not in (2, 3):
        raise ValueError(f"h_shown must be 2 or 3, got {h_shown!r}")
    c = Canvas(5.6, 7.6)
    labels = ["1", "h"] if h_shown == 2 else ["1", "2", "h"]
    xs = [1.45, 4.15] if h_shown == 2 else [1.0, 2.8, 4.6]
    w = 2.4 if h_shown == 2 else 1.65
    small = 10.5 if h_shown == 2 else 9

    inp = c.box(2.8, 0.95, 5.2, 0.6, r"$Q,\ K,\ V$   $(n \times d_{model})$", role="plain")
    c.text(2.8, 0.22, "cada cabeça projeta para $d_k = d_{model}/h$ colunas;\n"
           "na autoatenção, $Q = K = V = X$", fontsize=NOTE_FONT, color=NOTE)
    concat_y = 5.2
    for x, lab in zip(xs, labels, strict=True):
        third = w / 3
        projs = []
        for k, (sym, role) in enumerate((("Q", "query"), ("K", "key"), ("V", "value"))):
            px = x + (k - 1) * third
            box = c.box(px, 2.4, third - 0.05, 0.6, f"${sym} W_{sym}^{lab}$", role=role, fontsize=small)
            c.arrow((px, inp.top()[1]), box.bottom())
            projs.append(box)
        att = c.box(x, 3.5, w, 0.7, "Atenção\n(Exercício 1)", role="op", fontsize=11)
        for box in projs:
            c.arrow(box.top(), (box.x, att.bottom()[1]))
        head = c.box(x, 4.45, w, 0.5, f"cabeça$_{lab}$  $(n \\times d_k)$", role="value",
                     fontsize=small + 0.5)
        c.arrow(att.top(), head.bottom())
        c.arrow(head.top(), (x, concat_y - 0.3))
    c.text(2.8, 3.5, "⋯")
    concat = c.box(2.8, concat_y, 5.2, 0.6,
                   r"concatenar $[\mathrm{cabeça}_1; \dots; \mathrm{cabeça}_h]$   $(n \times d_{model})$",
                   role="op", fontsize=11)
    wo = c.box(2.8, 6.15, 3.0, 0.6, r"$\times\ W^O$   $(d_{model} \times d_{model})$", role="op", fontsize=11)
    c.arrow(concat.top(), wo.bottom())
    out = c.box(2.8, 7.1, 3.0, 0.55, r"saída   $(n \times d_{model})$", role="plain", fontsize=11)
    c.arrow(wo.top(), out.bottom())
    return c.fig


def encoder_block() -> Figure:
    r"""The post-norm encoder block (Activity 4, Ex. 3) with its two residual connections.

    :math:`h = \mathrm{LN}(x + \mathrm{MHA}(x, x, x))`, then
    :math:`\text{saída} = \mathrm{LN}(h + \mathrm{FFN}(h))`.
    """
    c = Canvas(5.8, 8.0)
    cx, bw = 2.4, 2.3
    eq_x = cx + bw / 2 + 0.25                        # left edge of the equations column

    x_in = c.box(cx, 0.45, 1.7, 0.55, r"$x$   $(n \times d_{model})$", role="plain", fontsize=11)
    fork = 1.05
    c.arrow(x_in.top(), (cx, fork), head=False)
    mha = c.box(cx, 2.0, bw, 0.75, "Atenção multicabeça\n(Exercício 2)", role="query", fontsize=11)
    for dx, lab in zip((-0.7, 0.0, 0.7), "QKV", strict=True):
        c.arrow((cx, fork), (cx + dx, 1.3), mha.bottom(dx=dx))
        c.text(cx + dx + 0.09, 1.43, f"${lab}$", fontsize=9.5, color=NOTE, ha="left")
    add1 = c.box(cx, 3.0, 0.5, 0.5, "+", role="plain", fontsize=14)
    c.arrow(mha.top(), add1.bottom())
    ln1 = c.box(cx, 3.85, bw, 0.55, "Normalização de camada", role="op", fontsize=11)
    c.arrow(add1.top(), ln1.bottom())
    c.arrow((cx, fork), (0.3, fork), (0.3, 3.0), add1.left())       # residual 1: x skips the attention
    c.text(0.38, 2.0, "conexão\nresidual", fontsize=NOTE_FONT, color=NOTE, ha="left")

    hb = 4.6
    c.text(cx + 0.1, hb + 0.05, "$h$", ha="left", fontsize=NOTE_FONT, color=NOTE)
    ffn = c.box(cx, 5.45, bw, 0.75, "FFN por posição\n" + r"$d_{model} \to d_{ff} \to d_{model}$",
                role="value", fontsize=10.5)
    c.arrow(ln1.top(), ffn.bottom())
    add2 = c.box(cx, 6.45, 0.5, 0.5, "+", role="plain", fontsize=14)
    c.arrow(ffn.top(), add2.bottom())
    ln2 = c.box(cx, 7.25, bw, 0.55, "Normalização de camada", role="op", fontsize=11)
    c.arrow(add2.top(), ln2.bottom())
    c.arrow((cx, hb), (0.3, hb), (0.3, 6.45), add2.left())           # residual 2: h skips the FFN
    c.text(0.38, 5.45, "conexão\nresidual", fontsize=NOTE_FONT, color=NOTE, ha="left")
    c.arrow(ln2.top(), (cx, 7.95))
    c.text(cx + 0.1, 7.78, r"saída $(n \times d_{model})$", ha="left", fontsize=NOTE_FONT, color=NOTE)

    # the two sub-layers, named beside the block with their equations
    for y0, y1, title, eq in (
            (1.6, 4.15, "subcamada 1", r"$h = \mathrm{LN}(x + \mathrm{MHA}(x, x, x))$"),
            (5.05, 7.55, "subcamada 2", r"$\mathrm{saída} = \mathrm{LN}(h + \mathrm{FFN}(h))$")):
        c.arrow((eq_x, y0), (eq_x + 0.08, y0), (eq_x + 0.08, y1), (eq_x, y1), head=False, width=1.0)
        c.text(eq_x + 0.2, (y0 + y1) / 2 + 0.2, title, ha="left", fontsize=NOTE_FONT)
        c.text(eq_x + 0.2, (y0 + y1) / 2 - 0.2, eq, ha="left", fontsize=9.5, color=NOTE)
    return c.fig


# --------------------------------------------------------------------------- lesson 5.10, exercise 3


def _seq2seq_panel(c: Canvas, y0: float, attention: bool, T: int):
    """One encoder-decoder of the copy task; its lowest element sits at height ``y0``."""
    step, bw = 0.66, 0.5
    enc_x = [0.45 + step * i for i in range(T)]
    dec_x = [enc_x[-1] + 0.8 + step * i for i in range(T)]
    y_band, y_state, y_io = y0 + 0.3, y0 + 1.2, y0 + 2.05
    hs, ss = [], []
    for i, x in enumerate(enc_x):
        c.text(x, y_io, f"$x_{i + 1}$", fontsize=11)
        hs.append(c.box(x, y_state, bw, 0.5, f"$h_{i + 1}$", role="key", fontsize=11))
        c.arrow((x, y_io - 0.18), hs[-1].top())
        if i:
            c.arrow(hs[-2].right(), hs[-1].left())
    for t, x in enumerate(dec_x):
        ss.append(c.box(x, y_state, bw, 0.5, f"$s_{t + 1}$", role="query", fontsize=11))
        c.arrow(ss[-1].top(), (x, y_io - 0.18))
        c.text(x, y_io, f"$y_{t + 1}$", fontsize=11)
        if t:
            c.arrow(ss[-2].right(), ss[-1].left())
    c.arrow(hs[-1].right(), ss[0].left())             # the decoder starts from the last encoder state
    if attention:
        band = c.box((enc_x[0] + dec_x[-1]) / 2, y_band, dec_x[-1] - enc_x[0] + bw + 0.1, 0.5,
                     r"atenção: $c_t = \sum_i\, \alpha_{t,i}\, h_i$, consulta $s_{t-1}$", role="weight",
                     fontsize=10.5)
        for h in hs:
            c.arrow(h.bottom(), (h.x, band.top()[1]))
        for s in ss:
            c.arrow((s.x, band.top()[1]), s.bottom())
    else:
        c.text((enc_x[-1] + dec_x[0]) / 2, y_state - 0.45, "gargalo", fontsize=NOTE_FONT, color=NOTE,
               va="top")
        for xs, name in ((enc_x, "codificador"), (dec_x, "decodificador")):
            c.text((xs[0] + xs[-1]) / 2, y_state - 0.45, name, fontsize=NOTE_FONT, color=NOTE, va="top")
    return hs, ss


def copy_task(T: int = 4) -> Figure:
    r"""The copy task (lesson 5.10, Ex. 3): the same GRU encoder-decoder without and with attention.

    The encoder reads :math:`x_1, \dots, x_T` and the decoder must write :math:`y_t = x_t`.
    Without attention the decoder only gets the encoder's last state :math:`h_T`; with
    attention, every step also receives a context :math:`c_t` mixed from all the :math:`h_i`.
    ``T`` (2 to 5) is the drawn length.
    """
    if not 2 <= T <= 5:
        raise ValueError(f"T must be 2 to 5 (the drawn length), got {T!r}")
    width = 0.45 + 2 * 0.66 * (T - 1) + 0.8 + 0.4
    c = Canvas(max(width, 5.0), 5.6)
    c.text(0.1, 5.35, f"Sem atenção: só $h_{T}$ chega ao decodificador", ha="left")
    _seq2seq_panel(c, 2.8, attention=False, T=T)
    c.text(0.1, 2.95, "Com atenção: todo passo lê todos os $h_i$", ha="left")
    _seq2seq_panel(c, 0.1, attention=True, T=T)
    return c.fig

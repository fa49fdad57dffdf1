r"""Adam, global-norm gradient clipping and a warm-up + cosine learning-rate schedule.

Parameters and gradients are dicts of arrays with the same keys; the update
is done in place on the parameter arrays.
"""
from __future__ import annotations

import math

import numpy as np


def clip_grad_norm(grads: dict, max_norm: float) -> float:
    r"""Scale every gradient in place so that the global L2 norm is at most ``max_norm``.

    .. math:: g \leftarrow g \cdot \min\!\left(1, \frac{c}{\lVert g \rVert_2}\right),
              \quad \lVert g \rVert_2 = \sqrt{\textstyle\sum_k \lVert g_k \rVert_2^2}

    Parameters
    ----------
    grads : dict of ndarray, any shapes
    max_norm : float
        The threshold ``c`` (> 0).

    Returns
    -------
    float
        The norm *before* clipping.
    """
    if not max_norm > 0:
        raise ValueError(f"max_norm must be > 0, got {max_norm!r}")
    total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
    if total > max_norm:
        scale = max_norm / total
        for g in grads.values():
            g *= g.dtype.type(scale)
    return total


def cosine_lr(step: int, total_steps: int, peak: float, warmup: int = 0, final: float = 0.0) -> float:
    r"""Linear warm-up to ``peak`` for ``warmup`` steps, then cosine decay to ``final``.

    .. math:: \eta_s = \eta_f + \tfrac12(\eta_p - \eta_f)\,(1 + \cos(\pi u)), \quad
              u = \frac{s - w}{S - w}

    ``step`` counts from 0; the last step ``total_steps - 1`` gets ``final``
    only in the limit (u < 1 always).
    """
    if step < warmup:
        return peak * (step + 1) / warmup
    u = (step - warmup) / max(1, total_steps - warmup)
    return final + 0.5 * (peak - final) * (1.0 + math.cos(math.pi * min(u, 1.0)))


class Adam:
    r"""Adam (Kingma & Ba, 2015) with bias correction.

    .. math::
        m &\leftarrow \beta_1 m + (1 - \beta_1) g, \qquad
        v \leftarrow \beta_2 v + (1 - \beta_2) g^2 \\
        \theta &\leftarrow \theta - \eta\, \frac{m / (1 - \beta_1^k)}{\sqrt{v / (1 - \beta_2^k)} + \epsilon}

    Parameters
    ----------
    params : dict of ndarray
        Updated in place by :meth:`step`.
    lr : float
        Default learning rate (``step`` may override it per call).
    betas : (float, float)
    eps : float
    lr_scale : dict of float, optional
        A factor on the learning rate of some parameters (by key; the others get 1).
    """

    def __init__(self, params: dict, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 lr_scale: dict | None = None):
        self.params = params
        self.lr = lr
        self.lr_scale = dict(lr_scale or {})
        if not set(self.lr_scale) <= set(params):
            unknown = sorted(set(self.lr_scale) - set(params))
            raise ValueError(f"lr_scale names keys that are not parameters: {unknown}")
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.k = 0
        self.m = {k: np.zeros_like(p) for k, p in params.items()}
        self.v = {k: np.zeros_like(p) for k, p in params.items()}

    def step(self, grads: dict, lr: float | None = None) -> None:
        """Apply one update; ``grads`` must have the same keys and shapes as ``params``."""
        lr = self.lr if lr is None else lr
        self.k += 1
        c1 = 1.0 - self.beta1 ** self.k
        c2 = 1.0 - self.beta2 ** self.k
        for key, p in self.params.items():
            g = grads[key]
            if g.shape != p.shape:
                raise ValueError(f"grads[{key!r}] has shape {g.shape}; "
                                 f"expected {p.shape} like params[{key!r}]")
            m, v = self.m[key], self.v[key]
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * (g * g)
            denom = np.sqrt(v / c2) + self.eps
            p -= (lr * self.lr_scale.get(key, 1.0) / c1) * m / denom

r"""A small Transformer encoder with per-position outputs, trained by the hand-written backward.

.. math::
    x^{(0)} = E[\text{tokens}] + PE, \qquad
    x^{(l)} = \operatorname{Block}_l(x^{(l-1)}), \qquad
    \text{logits} = x^{(L)} W_{out} + b_{out}

Each block is the post-norm encoder block of :mod:`attn.encoder` (run by
:func:`attn.backprop.encoder_block_forward`), ``PE`` the sinusoidal table of
:func:`attn.positional.positional_encoding`. The loss is the mean per-position
cross-entropy over the real (unpadded) positions.

Two switches serve the experiments: ``positional=False`` drops ``PE`` (the
model then sees a set of tokens, not a sequence), and ``scaled=False``
removes the :math:`1/\sqrt{d_k}` of the scores. The latter reuses the scaled
forward unchanged: the attention layer receives :math:`\sqrt{d_k}\,W_Q`, so
its scores are :math:`Q K^\top` exactly, and the gradient of ``W_q`` gets
the same factor.

Shapes: ``B`` batch, ``n`` sequence length, ``V`` vocabulary, ``C`` classes,
``d_model``, ``h`` heads, ``d_k = d_model / h``, ``d_ff``.
"""
from __future__ import annotations

import numpy as np

from ._checks import positive_int
from .backprop import BLOCK_KEYS, encoder_block_backward, encoder_block_forward, softmax_cross_entropy
from .core import padding_mask
from .multihead import MultiHeadAttention
from .positional import positional_encoding
from .seq2seq import _int_tokens, _lengths, _one_hot_scatter


class TransformerEncoder:
    """Token embedding + sinusoidal PE, ``num_layers`` post-norm encoder blocks, a per-position read-out.

    Parameters
    ----------
    vocab_size : int
        ``V``, number of input token ids.
    n_classes : int
        ``C``, number of output classes per position.
    d_model, num_heads, d_ff, num_layers : int
    max_len : int
        Longest sequence (rows of the PE table).
    positional : bool
        Add the sinusoidal positional encoding.
    scaled : bool
        Divide the scores by :math:`\\sqrt{d_k}` (the standard).
    seed : int
        Seeds the initial weights.
    dtype : numpy dtype
        float32 for training, float64 for gradient checks.

    Notes
    -----
    The weights live in the dict ``params``: ``emb`` (V, d_model); per block
    ``l``: ``{l}.W_q``, ``{l}.W_k``, ``{l}.W_v`` (h, d_model, d_k), ``{l}.W_o``
    (d_model, d_model), ``{l}.W1`` (d_model, d_ff), ``{l}.b1`` (d_ff,), ``{l}.W2``
    (d_ff, d_model), ``{l}.b2``, ``{l}.gamma1``, ``{l}.beta1``, ``{l}.gamma2``,
    ``{l}.beta2`` (d_model,); ``W_out`` (d_model, C), ``b_out`` (C,).
    """

    def __init__(self, vocab_size, n_classes, d_model=32, num_heads=2, d_ff=128, num_layers=2, max_len=64,
                 positional=True, scaled=True, seed=0, dtype=np.float32):
        self.V, self.C = positive_int(vocab_size, "vocab_size"), positive_int(n_classes, "n_classes")
        self.d_model, self.d_ff = positive_int(d_model, "d_model"), positive_int(d_ff, "d_ff")
        self.num_layers = positive_int(num_layers, "num_layers")
        self.max_len = positive_int(max_len, "max_len")
        self.positional, self.scaled = bool(positional), bool(scaled)
        rng = np.random.default_rng(seed)
        d = self.d_model
        p = {"emb": rng.standard_normal((self.V, d)).astype(dtype)}
        self.mhas = []
        for layer in range(self.num_layers):
            mha = MultiHeadAttention(d, num_heads, rng=rng)  # W ~ N(0, 1/d_model)
            self.mhas.append(mha)
            for key in ("W_q", "W_k", "W_v", "W_o"):
                p[f"{layer}.{key}"] = getattr(mha, key).astype(dtype)
            p[f"{layer}.W1"] = (rng.uniform(-1, 1, (d, self.d_ff)) / np.sqrt(d)).astype(dtype)
            p[f"{layer}.b1"] = np.zeros(self.d_ff, dtype=dtype)
            p[f"{layer}.W2"] = (rng.uniform(-1, 1, (self.d_ff, d)) / np.sqrt(self.d_ff)).astype(dtype)
            for key in ("b2", "beta1", "beta2"):
                p[f"{layer}.{key}"] = np.zeros(d, dtype=dtype)
            for key in ("gamma1", "gamma2"):
                p[f"{layer}.{key}"] = np.ones(d, dtype=dtype)
        p["W_out"] = (rng.uniform(-1, 1, (d, self.C)) / np.sqrt(d)).astype(dtype)
        p["b_out"] = np.zeros(self.C, dtype=dtype)
        self.params = p
        self.num_heads, self.d_k = self.mhas[0].num_heads, self.mhas[0].d_k
        self.q_factor = np.dtype(dtype).type(1.0 if self.scaled else np.sqrt(self.d_k))
        self.pe = positional_encoding(self.max_len, d).astype(dtype)  # (max_len, d_model)

    def n_params(self) -> int:
        """Number of scalar parameters."""
        return int(sum(v.size for v in self.params.values()))

    def _block(self, layer):
        """The block's attention layer (pointing at the current weights) and its other parameters."""
        p, mha = self.params, self.mhas[layer]
        mha.W_q = p[f"{layer}.W_q"] * self.q_factor if not self.scaled else p[f"{layer}.W_q"]
        mha.W_k, mha.W_v, mha.W_o = p[f"{layer}.W_k"], p[f"{layer}.W_v"], p[f"{layer}.W_o"]
        return mha, {k: p[f"{layer}.{k}"] for k in BLOCK_KEYS[4:]}

    def forward(self, tokens, lengths=None):
        """Logits for every position.

        Parameters
        ----------
        tokens : ndarray of int, shape (B, n)
            Ids in ``[0, V)``; positions ``>= lengths[b]`` are padding (any id).
        lengths : ndarray of int, shape (B,), optional
            Real lengths (default: all ``n``); padded keys are masked out.

        Returns
        -------
        logits : ndarray, shape (B, n, C)
        cache : dict
            ``tokens``, ``mask`` (B, n) or None, ``states`` (the input of every
            block and the final output, each (B, n, d_model)) and ``blocks``
            (the caches of :func:`attn.backprop.encoder_block_forward`, whose
            ``weights`` (B, h, n, n) are the attention maps).
        """
        tokens = _int_tokens(tokens, "tokens", self.V)
        B, n = tokens.shape
        if n > self.max_len:
            raise ValueError(f"tokens has shape ({B}, {n}); "
                             f"expected (B, n) with n <= max_len = {self.max_len}")
        key_mask = None if lengths is None else padding_mask(_lengths(lengths, "lengths", B, n), n)  # (B, n)
        attn_mask = None if key_mask is None else np.repeat(key_mask[:, None, :], n, axis=1)  # (B, n, n)
        x = self.params["emb"][tokens]  # (B, n, d_model)
        if self.positional:
            x = x + self.pe[:n]  # (B, n, d_model)
        states, blocks = [x], []
        for layer in range(self.num_layers):
            mha, bp = self._block(layer)
            x, cache = encoder_block_forward(x, mha, bp, attn_mask)  # (B, n, d_model)
            states.append(x)
            blocks.append(cache)
        logits = x @ self.params["W_out"] + self.params["b_out"]  # (B, n, C)
        return logits, {"tokens": tokens, "mask": key_mask, "states": states, "blocks": blocks}

    def loss_and_grads(self, tokens, targets, lengths=None):
        """Mean cross-entropy over the real positions and its gradient for every parameter.

        Parameters
        ----------
        tokens : ndarray of int, shape (B, n)
        targets : ndarray of int, shape (B, n)
            Class of every position in ``[0, C)`` (anything on padded positions).
        lengths : ndarray of int, shape (B,), optional

        Returns
        -------
        loss : float
        grads : dict of ndarray
            Same keys and shapes as ``params``.
        """
        logits, cache = self.forward(tokens, lengths)
        loss, d_logits = softmax_cross_entropy(logits, targets, cache["mask"])  # (B, n, C)
        d, p = self.d_model, self.params
        x = cache["states"][-1]  # (B, n, d_model)
        grads = {"W_out": x.reshape(-1, d).T @ d_logits.reshape(-1, self.C),  # (d_model, C)
                 "b_out": d_logits.reshape(-1, self.C).sum(axis=0)}  # (C,)
        dx = d_logits @ p["W_out"].T  # (B, n, d_model)
        for layer in range(self.num_layers - 1, -1, -1):
            dx, g = encoder_block_backward(dx, cache["blocks"][layer])  # (B, n, d_model)
            g["W_q"] = g["W_q"] * self.q_factor if not self.scaled else g["W_q"]
            grads.update({f"{layer}.{k}": v for k, v in g.items()})
        # the PE is a constant: the embedding rows receive dx, summed by token id
        grads["emb"] = _one_hot_scatter(cache["tokens"].ravel(), dx.reshape(-1, d), self.V)  # (V, d_model)
        return loss, {k: grads[k] for k in p}

    def predict(self, tokens, lengths=None) -> np.ndarray:
        """Most likely class of every position, shape (B, n)."""
        return self.forward(tokens, lengths)[0].argmax(axis=-1)

    def attention_maps(self, tokens, lengths=None) -> np.ndarray:
        """Attention weights of every block and head, shape (num_layers, B, h, n, n)."""
        return np.stack([c["weights"] for c in self.forward(tokens, lengths)[1]["blocks"]])

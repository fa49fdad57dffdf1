r"""A small Transformer encoder with per-position outputs, trained by the hand-written backward.

.. math::
    x^{(0)} = E[\text{tokens}] + PE, \qquad
    x^{(l)} = \operatorname{Block}_l(x^{(l-1)}), \qquad
    \text{logits} = x^{(L)} W_{out} + b_{out}

Each block is the post-norm encoder block of :mod:`attn.encoder` (run by
:func:`attn.training.backward.encoder_block_forward`, which keeps what the backward needs), ``PE`` the
sinusoidal table of
:func:`attn.positional.positional_encoding`. The loss is the mean per-position
cross-entropy over the real (unpadded) positions.

Two switches serve the experiments: ``positional=False`` drops ``PE`` (the
model then sees a set of tokens, not a sequence), and ``scaled=False``
removes the :math:`1/\sqrt{d_k}` of the scores: every attention layer is
built with ``scale=1`` (:func:`attn.core.scaled_dot_product_attention`), and
the backward receives the same factor from the layer.

Shapes: ``B`` batch, ``n`` sequence length, ``V`` vocabulary, ``C`` classes,
``d_model``, ``h`` heads, ``d_k = d_model / h``, ``d_ff``.
"""
from __future__ import annotations

import numpy as np

from .._checks import positive_int
from ..core import padding_mask
from ..multihead import MultiHeadAttention
from ..positional import positional_encoding
from ._checks import check_lengths, check_tokens
from .backward import (
    BLOCK_KEYS,
    embedding_backward,
    encoder_block_backward,
    encoder_block_forward,
    softmax_cross_entropy,
)

# the order of a block's FFN and norm parameters in ``params`` (it fixes the order of the global
# gradient norm's float sum, so it is kept as it was when the page's numbers were first computed)
PARAM_ORDER = ("W1", "b1", "W2", "b2", "beta1", "beta2", "gamma1", "gamma2")


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
    ``params`` names every weight array: ``emb`` (V, d_model); per block
    ``l``: ``{l}.W_q``, ``{l}.W_k``, ``{l}.W_v`` (h, d_model, d_k), ``{l}.W_o``
    (d_model, d_model), ``{l}.W1`` (d_model, d_ff), ``{l}.b1`` (d_ff,), ``{l}.W2``
    (d_ff, d_model), ``{l}.b2``, ``{l}.gamma1``, ``{l}.beta1``, ``{l}.gamma2``,
    ``{l}.beta2`` (d_model,); ``W_out`` (d_model, C), ``b_out`` (C,).

    Each array exists once: ``params["{l}.W_q"]`` *is* ``blocks[l][0].W_q``
    (the block's :class:`~attn.multihead.MultiHeadAttention`) and
    ``params["{l}.W1"]`` is ``blocks[l][1]["W1"]``. Training updates the arrays
    in place (:class:`attn.training.optim.Adam`); assign with ``params[k][...] = value``,
    never ``params[k] = value``.
    """

    def __init__(self, vocab_size, n_classes, d_model=32, num_heads=2, d_ff=128, num_layers=2, max_len=64,
                 positional=True, scaled=True, seed=0, dtype=np.float32):
        self.V, self.C = positive_int(vocab_size, "vocab_size"), positive_int(n_classes, "n_classes")
        self.d_model, self.d_ff = positive_int(d_model, "d_model"), positive_int(d_ff, "d_ff")
        self.num_layers = positive_int(num_layers, "num_layers")
        self.max_len = positive_int(max_len, "max_len")
        self.positional, self.scaled = bool(positional), bool(scaled)
        rng = np.random.default_rng(seed)
        d, f = self.d_model, self.d_ff
        p = {"emb": rng.standard_normal((self.V, d)).astype(dtype)}
        zeros, ones = (lambda k: np.zeros(k, dtype=dtype)), (lambda k: np.ones(k, dtype=dtype))
        self.blocks = []  # per layer: (attention layer, FFN and norm parameters)
        for layer in range(self.num_layers):
            mha = MultiHeadAttention(d, num_heads, rng=rng, scale=None if self.scaled else 1.0)
            for key in BLOCK_KEYS[:4]:
                setattr(mha, key, getattr(mha, key).astype(dtype))  # once, at construction
            rest = {"W1": (rng.uniform(-1, 1, (d, f)) / np.sqrt(d)).astype(dtype), "b1": zeros(f),
                    "W2": (rng.uniform(-1, 1, (f, d)) / np.sqrt(f)).astype(dtype), "b2": zeros(d),
                    "gamma1": ones(d), "beta1": zeros(d), "gamma2": ones(d), "beta2": zeros(d)}
            self.blocks.append((mha, rest))
            p.update({f"{layer}.{key}": getattr(mha, key) for key in BLOCK_KEYS[:4]})
            p.update({f"{layer}.{key}": rest[key] for key in PARAM_ORDER})
        p["W_out"] = (rng.uniform(-1, 1, (d, self.C)) / np.sqrt(d)).astype(dtype)
        p["b_out"] = np.zeros(self.C, dtype=dtype)
        self.params = p
        self.num_heads, self.d_k = self.blocks[0][0].num_heads, self.blocks[0][0].d_k
        self.pe = positional_encoding(self.max_len, d).astype(dtype)  # (max_len, d_model)

    def n_params(self) -> int:
        """Number of scalar parameters."""
        return int(sum(v.size for v in self.params.values()))

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
            (the caches of :func:`~attn.training.backward.encoder_block_forward`, whose
            ``weights`` (B, h, n, n) are the attention maps).
        """
        tokens = check_tokens(tokens, "tokens", self.V)
        B, n = tokens.shape
        if n > self.max_len:
            raise ValueError(f"tokens has shape {tokens.shape}; expected (B, n) with "
                             f"n <= max_len = {self.max_len}")
        lengths = None if lengths is None else check_lengths(lengths, "lengths", B, n)
        key_mask = None if lengths is None else padding_mask(lengths, n)  # (B, n)
        attn_mask = None if key_mask is None else np.repeat(key_mask[:, None, :], n, axis=1)  # (B, n, n)
        x = self.params["emb"][tokens]  # (B, n, d_model)
        if self.positional:
            x = x + self.pe[:n]  # (B, n, d_model)
        states, blocks = [x], []
        for mha, rest in self.blocks:
            x, cache = encoder_block_forward(x, mha, rest, attn_mask)  # (B, n, d_model)
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
            grads.update({f"{layer}.{k}": v for k, v in g.items()})
        # the PE is a constant: the embedding rows receive dx, summed by token id
        grads["emb"] = embedding_backward(dx, cache["tokens"], self.V)  # (V, d_model)
        return loss, {k: grads[k] for k in p}

    def predict(self, tokens, lengths=None) -> np.ndarray:
        """Most likely class of every position, shape (B, n)."""
        return self.forward(tokens, lengths)[0].argmax(axis=-1)

    def attention_maps(self, tokens, lengths=None) -> np.ndarray:
        """Attention weights of every block and head, shape (num_layers, B, h, n, n)."""
        return np.stack([c["weights"] for c in self.forward(tokens, lengths)[1]["blocks"]])

r"""The whole Transformer: an encoder–decoder with cross-attention, trained by the hand-written backward.

.. math::
    m = \operatorname{Enc}_N(\dots\operatorname{Enc}_1(E_s[x] + PE)), \qquad
    y^{(l)} = \operatorname{Dec}_l(y^{(l-1)}, m), \quad y^{(0)} = E_t[y_{in}] + PE, \qquad
    \text{logits} = y^{(N)} W_{out} + b_{out}

The encoder blocks are the post-norm blocks of :mod:`attn.encoder` (run by
:func:`attn.training.backward.encoder_block_forward`, with the source key padding mask), the decoder blocks
those of :mod:`attn.decoder` (causal self-attention, then cross-attention to ``m`` with the same
padding mask, then the FFN), ``PE`` the sinusoidal table of :func:`attn.positional.positional_encoding`.
Training is teacher-forced cross-entropy over the real target tokens, with the signature of
:meth:`attn.training.seq2seq.Seq2Seq.loss_and_grads`; :meth:`EncoderDecoder.greedy_decode` has the signature
of
:meth:`attn.training.seq2seq.Seq2Seq.greedy_decode`, so :func:`attn.training.copytask.evaluate` scores both
models on
the same sequences.

The decoder's self-attention gets only the causal mask: a real target position ``t`` attends to
positions ``<= t``, all real, so padded target positions never reach a real one (and they cost
nothing in the loss).

Shapes: ``B`` batch, ``S`` source length, ``T`` target length, ``V`` vocabulary, ``d_model``,
``h`` heads, ``d_k = d_model / h``, ``d_ff``, ``N`` layers on each side.
"""
from __future__ import annotations

import copy

import numpy as np

from .._checks import positive_int
from ..core import causal_mask, padding_mask
from ..decoder import (
    DECODER_KEYS,
    cross_attention_cache,
    decoder_block_step,
    empty_self_cache,
    transformer_decoder_block,
)
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
from .decoder_backward import ATTENTION_KEYS, decoder_block_backward

SITES = ("enc", "self", "cross")  # a head's place: encoder self-attention, decoder self- or cross-attention


def _ffn_and_norms(rng, d, d_ff, n_norms, dtype) -> dict:
    """FFN weights (uniform, fan-in scaled), zero biases, and ``n_norms`` layer norms at (1, 0)."""
    p = {"W1": (rng.uniform(-1, 1, (d, d_ff)) / np.sqrt(d)).astype(dtype), "b1": np.zeros(d_ff, dtype=dtype),
         "W2": (rng.uniform(-1, 1, (d_ff, d)) / np.sqrt(d_ff)).astype(dtype), "b2": np.zeros(d, dtype=dtype)}
    for i in range(1, n_norms + 1):
        p[f"gamma{i}"], p[f"beta{i}"] = np.ones(d, dtype=dtype), np.zeros(d, dtype=dtype)
    return p


class EncoderDecoder:
    """Embeddings + sinusoidal PE on both sides, ``N`` encoder and ``N`` decoder blocks, an output projection.

    Parameters
    ----------
    vocab_size : int
        ``V``; source and target share the token ids (as in the copy task) but not the embeddings.
    d_model, num_heads, d_ff, num_layers : int
        ``num_layers`` blocks on each side.
    max_len : int
        Longest source or target sequence (rows of the PE table).
    seed : int
        Seeds the initial weights.
    dtype : numpy dtype
        float32 for training, float64 for gradient checks.

    Notes
    -----
    The weights live in the dict ``params``: ``src_emb``, ``tgt_emb`` (V, d_model); encoder block
    ``l``: ``enc.{l}.W_q`` .. ``enc.{l}.W_o`` and ``enc.{l}.W1`` .. ``enc.{l}.beta2`` (the keys of
    ``attn.training.backward.BLOCK_KEYS``); decoder block ``l``: ``dec.{l}.self.W_q`` .. ``dec.{l}.self.W_o``,
    ``dec.{l}.cross.W_q`` .. ``dec.{l}.cross.W_o`` (attention, (h, d_model, d_k) and (d_model, d_model))
    and ``dec.{l}.W1`` .. ``dec.{l}.beta3`` (``attn.decoder.DECODER_KEYS``); ``W_out``
    (d_model, V), ``b_out`` (V,).
    """

    def __init__(self, vocab_size, d_model=32, num_heads=2, d_ff=64, num_layers=1, max_len=128, seed=0,
                 dtype=np.float32):
        self.V = positive_int(vocab_size, "vocab_size")
        self.d_model, self.d_ff = positive_int(d_model, "d_model"), positive_int(d_ff, "d_ff")
        self.num_layers = positive_int(num_layers, "num_layers")
        self.max_len = positive_int(max_len, "max_len")
        rng = np.random.default_rng(seed)
        d = self.d_model
        p = {"src_emb": rng.standard_normal((self.V, d)).astype(dtype),
             "tgt_emb": rng.standard_normal((self.V, d)).astype(dtype)}
        self.mhas = {}
        for layer in range(self.num_layers):
            for site, prefix in (("enc", f"enc.{layer}."), ("self", f"dec.{layer}.self."),
                                 ("cross", f"dec.{layer}.cross.")):
                mha = self.mhas[(site, layer)] = MultiHeadAttention(d, num_heads, rng=rng)  # W ~ N(0, 1/d)
                p.update({prefix + k: getattr(mha, k).astype(dtype) for k in ATTENTION_KEYS})
            p.update({f"enc.{layer}.{k}": v for k, v in _ffn_and_norms(rng, d, self.d_ff, 2, dtype).items()})
            p.update({f"dec.{layer}.{k}": v for k, v in _ffn_and_norms(rng, d, self.d_ff, 3, dtype).items()})
        p["W_out"] = (rng.uniform(-1, 1, (d, self.V)) / np.sqrt(d)).astype(dtype)
        p["b_out"] = np.zeros(self.V, dtype=dtype)
        self.params = p
        self.num_heads, self.d_k = self.mhas[("enc", 0)].num_heads, self.mhas[("enc", 0)].d_k
        self.pe = positional_encoding(self.max_len, d).astype(dtype)  # (max_len, d_model)

    def n_params(self) -> int:
        """Number of scalar parameters."""
        return int(sum(v.size for v in self.params.values()))

    def _mha(self, site, layer) -> MultiHeadAttention:
        """The attention layer of ``site`` in block ``layer``, pointing at the current weights."""
        mha = self.mhas[(site, layer)]
        prefix = f"enc.{layer}." if site == "enc" else f"dec.{layer}.{site}."
        for k in ATTENTION_KEYS:
            setattr(mha, k, self.params[prefix + k])
        return mha

    def _block_params(self, side, layer) -> dict:
        keys = BLOCK_KEYS[4:] if side == "enc" else DECODER_KEYS
        return {k: self.params[f"{side}.{layer}.{k}"] for k in keys}

    def _positions(self, n, name):
        if n > self.max_len:
            raise ValueError(f"{name} has {n} positions; expected at most max_len = {self.max_len}")
        return self.pe[:n]  # (n, d_model)

    # ------------------------------------------------------------------ forward
    def encode(self, src, src_len):
        """Run the encoder.

        Parameters
        ----------
        src : ndarray of int, shape (B, S)
            Source ids in ``[0, V)``; positions ``>= src_len[b]`` are padding (any id).
        src_len : ndarray of int, shape (B,)
            Real lengths, in ``[1, S]``.

        Returns
        -------
        memory : ndarray, shape (B, S, d_model)
        cache : dict
            ``src``, ``key_mask`` (B, S) True on real positions, ``blocks`` (the caches of
            :func:`~attn.training.backward.encoder_block_forward`, whose ``weights`` (B, h, S, S) are the
            maps).
        """
        src = check_tokens(src, "src", self.V)
        B, S = src.shape
        key_mask = padding_mask(check_lengths(src_len, "src_len", B, S), S)  # (B, S)
        attn_mask = np.repeat(key_mask[:, None, :], S, axis=1)  # (B, S, S)
        x = self.params["src_emb"][src] + self._positions(S, "src")  # (B, S, d_model)
        blocks = []
        for layer in range(self.num_layers):
            x, cache = encoder_block_forward(x, self._mha("enc", layer), self._block_params("enc", layer),
                                             attn_mask)  # (B, S, d_model)
            blocks.append(cache)
        return x, {"src": src, "key_mask": key_mask, "blocks": blocks}

    def decode(self, memory, key_mask, tgt_in):
        """Run the decoder on a whole (teacher-forced) target prefix, causal mask included.

        Parameters
        ----------
        memory : ndarray, shape (B, S, d_model)
        key_mask : ndarray of bool, shape (B, S)
        tgt_in : ndarray of int, shape (B, T)
            Decoder inputs (start token, then the target shifted right).

        Returns
        -------
        logits : ndarray, shape (B, T, V)
        cache : dict
            ``tgt_in``, ``out`` (B, T, d_model) the last block's output, ``blocks`` (the caches of
            :func:`attn.decoder.transformer_decoder_block`, with ``self_weights`` (B, h, T, T)
            and ``cross_weights`` (B, h, T, S)).
        """
        tgt_in = check_tokens(tgt_in, "tgt_in", self.V)
        B, T = tgt_in.shape
        if memory.shape[0] != B:
            raise ValueError(f"tgt_in has shape {tgt_in.shape}; expected (B, T) with B = "
                             f"{memory.shape[0]} from the source")
        cross_mask = np.repeat(key_mask[:, None, :], T, axis=1)  # (B, T, S)
        self_mask = causal_mask(T)  # (T, T)
        y = self.params["tgt_emb"][tgt_in] + self._positions(T, "tgt_in")  # (B, T, d_model)
        blocks = []
        for layer in range(self.num_layers):
            y, cache = transformer_decoder_block(y, memory, self._mha("self", layer),
                                                 self._mha("cross", layer), self_mask=self_mask,
                                                 cross_mask=cross_mask, return_cache=True,
                                                 **self._block_params("dec", layer))  # (B, T, d_model)
            blocks.append(cache)
        logits = y @ self.params["W_out"] + self.params["b_out"]  # (B, T, V)
        return logits, {"tgt_in": tgt_in, "out": y, "blocks": blocks}

    def forward(self, src, src_len, tgt_in):
        """Teacher-forced logits of every target position.

        Returns
        -------
        logits : ndarray, shape (B, T, V)
        cache : dict
            ``enc`` (from :meth:`encode`), ``dec`` (from :meth:`decode`) and ``memory`` (B, S, d_model).
        """
        memory, enc = self.encode(src, src_len)
        logits, dec = self.decode(memory, enc["key_mask"], tgt_in)
        return logits, {"enc": enc, "dec": dec, "memory": memory}

    # ------------------------------------------------------------------ training
    def loss_and_grads(self, src, src_len, tgt_in, tgt_out, tgt_len):
        """Teacher-forced cross-entropy over the real target tokens and its gradient for every parameter.

        Parameters
        ----------
        src : ndarray of int, shape (B, S)
        src_len : ndarray of int, shape (B,)
        tgt_in : ndarray of int, shape (B, T)
        tgt_out : ndarray of int, shape (B, T)
            Tokens to predict.
        tgt_len : ndarray of int, shape (B,)
            Positions ``>= tgt_len`` are padding and cost nothing.

        Returns
        -------
        loss : float
        grads : dict of ndarray
            Same keys and shapes as ``params``.
        """
        logits, cache = self.forward(src, src_len, tgt_in)
        B, T = cache["dec"]["tgt_in"].shape
        tgt_out = check_tokens(tgt_out, "tgt_out", self.V)
        if tgt_out.shape != (B, T):
            raise ValueError(f"tgt_out has shape {tgt_out.shape}; expected (B, T) = ({B}, {T}) "
                             "from tgt_in")
        weight = padding_mask(check_lengths(tgt_len, "tgt_len", B, T), T)  # (B, T)
        loss, d_logits = softmax_cross_entropy(logits, tgt_out, weight)  # (B, T, V)
        d, p = self.d_model, self.params
        y = cache["dec"]["out"]  # (B, T, d_model)
        grads = {"W_out": y.reshape(-1, d).T @ d_logits.reshape(-1, self.V),  # (d_model, V)
                 "b_out": d_logits.reshape(-1, self.V).sum(axis=0)}  # (V,)
        dy = d_logits @ p["W_out"].T  # (B, T, d_model)
        d_memory = np.zeros_like(cache["memory"])  # (B, S, d_model): every decoder block reads it
        for layer in range(self.num_layers - 1, -1, -1):
            dy, dm, g = decoder_block_backward(dy, cache["dec"]["blocks"][layer])  # (B, T, d), (B, S, d)
            d_memory += dm
            grads.update({f"dec.{layer}.{k}": v for k, v in g.items()})
        dx = d_memory
        for layer in range(self.num_layers - 1, -1, -1):
            dx, g = encoder_block_backward(dx, cache["enc"]["blocks"][layer])  # (B, S, d_model)
            grads.update({f"enc.{layer}.{k}": v for k, v in g.items()})
        # the PE is a constant: the embedding rows receive the gradient, summed by token id
        grads["tgt_emb"] = embedding_backward(dy, cache["dec"]["tgt_in"], self.V)  # (V, d_model)
        grads["src_emb"] = embedding_backward(dx, cache["enc"]["src"], self.V)  # (V, d_model)
        return loss, {k: grads[k] for k in p}

    # ------------------------------------------------------------------ inference
    def generate(self, src, src_len, out_len, bos, use_cache=True):
        """Greedy generation, keeping the logits and every attention map.

        With ``use_cache`` each step runs one new position through the decoder blocks with
        :func:`attn.decoder.decoder_block_step` (one query row per block, keys and values of the
        earlier positions kept); without it each step runs :meth:`decode` on the whole prefix again.
        Both compute the same numbers (tested).

        Parameters
        ----------
        src : ndarray of int, shape (B, S)
        src_len : ndarray of int, shape (B,)
        out_len : int
            Number of steps ``T``.
        bos : int
            Start token fed at the first step.
        use_cache : bool

        Returns
        -------
        tokens : ndarray of int, shape (B, T)
        logits : ndarray, shape (B, T, V)
            The logits of step ``t`` are computed from ``bos, tokens[:, :t]``.
        weights : dict
            ``self`` (N, B, h, T, T) causal self-attention and ``cross`` (N, B, h, T, S)
            cross-attention weights of every decoder block and head.
        """
        out_len = positive_int(out_len, "out_len")
        self._positions(out_len, "the output")
        memory, enc = self.encode(src, src_len)
        key_mask = enc["key_mask"]  # (B, S)
        B, S = key_mask.shape
        N, h, dt = self.num_layers, self.num_heads, memory.dtype
        tokens = np.empty((B, out_len), dtype=np.int64)
        logits = np.empty((B, out_len, self.V), dtype=dt)
        weights = {"self": np.zeros((N, B, h, out_len, out_len), dtype=dt),
                   "cross": np.zeros((N, B, h, out_len, S), dtype=dt)}
        tgt_in = np.full((B, out_len), int(bos))
        if not use_cache:
            for t in range(out_len):
                step_logits, _ = self.decode(memory, key_mask, tgt_in[:, :t + 1])  # (B, t + 1, V)
                tokens[:, t] = step_logits[:, -1].argmax(axis=-1)
                if t + 1 < out_len:
                    tgt_in[:, t + 1] = tokens[:, t]
            logits[...], dec = self.decode(memory, key_mask, tgt_in)
            for layer, block in enumerate(dec["blocks"]):
                weights["self"][layer] = block["self_weights"]  # (B, h, T, T)
                weights["cross"][layer] = block["cross_weights"]  # (B, h, T, S)
            return tokens, logits, weights
        layers = [(self._mha("self", layer), self._mha("cross", layer), self._block_params("dec", layer))
                  for layer in range(N)]
        cross = [cross_attention_cache(memory, c) for _, c, _ in layers]  # once per sequence
        past = [empty_self_cache(B, out_len, s, dt) for s, _, _ in layers]
        for t in range(out_len):
            y = self.params["tgt_emb"][tgt_in[:, t]][:, None, :] + self.pe[t]  # (B, 1, d_model)
            for layer, (s_mha, c_mha, p) in enumerate(layers):
                y, w_self, w_cross = decoder_block_step(y, past[layer], cross[layer], s_mha, c_mha, p,
                                                        key_mask)  # (B, 1, d_model)
                weights["self"][layer, :, :, t, :t + 1] = w_self[:, :, 0]  # (B, h, t + 1)
                weights["cross"][layer, :, :, t] = w_cross[:, :, 0]  # (B, h, S)
            logits[:, t] = y[:, 0] @ self.params["W_out"] + self.params["b_out"]  # (B, V)
            tokens[:, t] = logits[:, t].argmax(axis=-1)
            if t + 1 < out_len:
                tgt_in[:, t + 1] = tokens[:, t]
        return tokens, logits, weights

    def greedy_decode(self, src, src_len, out_len, bos, attention_mode="learned", rng=None,
                      return_weights=False):
        """Greedy decoding through the key/value cache, as
        :meth:`attn.training.seq2seq.Seq2Seq.greedy_decode`.

        Parameters
        ----------
        src : ndarray of int, shape (B, S)
        src_len : ndarray of int, shape (B,)
        out_len : int
        bos : int
        attention_mode : {"learned"}
            Only the learned weights (the weight replacements of :func:`attn.training.seq2seq.replace_weights`
            belong to the single-head Bahdanau model; heads are ablated with :meth:`without_heads`).
        rng : unused
        return_weights : bool

        Returns
        -------
        tokens : ndarray of int, shape (B, T)
        weights : dict, only if ``return_weights`` (see :meth:`generate`)
        """
        if attention_mode != "learned":
            raise ValueError(f"attention_mode must be 'learned' for EncoderDecoder, got {attention_mode!r}")
        tokens, _, weights = self.generate(src, src_len, out_len, bos)
        return (tokens, weights) if return_weights else tokens

    def without_heads(self, heads) -> "EncoderDecoder":
        """A copy of the model with some heads removed (their share of the output projection zeroed).

        Parameters
        ----------
        heads : iterable of (site, layer, head)
            ``site`` in ``("enc", "self", "cross")``: encoder self-attention, decoder causal
            self-attention or cross-attention; ``layer`` in ``[0, N)``; ``head`` in ``[0, h)``.

        Returns
        -------
        EncoderDecoder
            Rows ``head * d_k : (head + 1) * d_k`` of that layer's ``W_o`` are 0, so the head adds
            nothing to the layer's output; everything else is unchanged.
        """
        model = copy.deepcopy(self)
        for site, layer, head in heads:
            if site not in SITES or not 0 <= layer < self.num_layers or not 0 <= head < self.num_heads:
                raise ValueError(f"head ({site!r}, {layer}, {head}) is not one of the model's: site in "
                                 f"{SITES}, layer in [0, {self.num_layers}), head in [0, {self.num_heads})")
            key = f"enc.{layer}.W_o" if site == "enc" else f"dec.{layer}.{site}.W_o"
            model.params[key][head * self.d_k:(head + 1) * self.d_k] = 0
        return model

r"""GRU encoder-decoder, with or without Bahdanau attention, with a hand-written backward.

Both models share the encoder: an embedding and a GRU (:mod:`attn.training.gru`) read
the source; padded steps carry the state over, so the encoder's last state is
every sequence's state at its own last real token.

*Plain* decoder (``attention=False``): starts from the encoder's last state
and receives only the embedding of the previous output token; it never sees
the encoder again.

*Attention* decoder (``attention=True``, Bahdanau et al., 2014): at step t the
*previous* state :math:`s_{t-1}` is the query,

.. math::
    e_{t,i} = v_a^\top \tanh(W_a s_{t-1} + U_a h_i), \quad
    \alpha_t = \operatorname{masked\_softmax}(e_t), \quad
    c_t = \textstyle\sum_i \alpha_{t,i} h_i, \quad
    s_t = \operatorname{GRU}([E y_{t-1}; c_t], s_{t-1})

The score is :func:`attn.classic.additive_scores` (the package's single
implementation; ``U_a h_i`` is computed once per sequence) and the weights
are :func:`attn.core.masked_softmax`, so padded source positions get weight 0.
The plain decoder predicts :math:`\operatorname{softmax}(W_o s_t + b_o)`; the
attention decoder, like Bahdanau's :math:`p(y_t \mid y_{t-1}, s_t, c_t)`, also
reads the context: :math:`\operatorname{softmax}(W_o s_t + W_c c_t + b_o)`.

Training is cross-entropy with teacher forcing, averaged over the real target
tokens (padded targets cost nothing). Shapes: ``B`` batch, ``S`` source
length, ``T`` target length, ``V`` vocabulary, ``E`` embedding, ``H`` hidden,
``A`` attention width (``d_attn``).
"""
from __future__ import annotations

import numpy as np

from ..classic import additive_scores
from ..core import _masked_softmax, padding_mask
from ._checks import check_lengths, check_tokens
from .backward import embedding_backward
from .gru import cell_backward, cell_forward, gru_backward, gru_forward, init_gru

ATTENTION_MODES = ("learned", "uniform", "permuted", "shifted")


def replace_weights(alpha, mode, src_len, rng=None):
    """Replace attention weights at inference, for the ablation study.

    Parameters
    ----------
    alpha : ndarray, shape (B, S)
        Learned weights (zero on padded positions).
    mode : {"learned", "uniform", "permuted", "shifted"}
        ``uniform``: :math:`1/L_b` on each real position; ``permuted``: the
        learned weights randomly shuffled among the real positions;
        ``shifted``: the learned weights moved one position to the right,
        cyclically within the real length (:math:`\\alpha'_i = \\alpha_{i-1}`).
    src_len : ndarray of int, shape (B,)
    rng : numpy Generator, required for ``permuted``

    Returns
    -------
    ndarray, shape (B, S)
        Still zero on padded positions and summing to 1 over real ones.
    """
    if mode not in ATTENTION_MODES:
        raise ValueError(f"mode must be one of {ATTENTION_MODES}, got {mode!r}")
    if mode == "learned":
        return alpha
    B, S = alpha.shape
    pos = np.arange(S)[None, :]  # (1, S)
    real = pos < src_len[:, None]  # (B, S)
    if mode == "uniform":
        return np.where(real, 1.0 / src_len[:, None], 0.0).astype(alpha.dtype)
    if mode == "shifted":
        source = np.where(real, (pos - 1) % src_len[:, None], pos)  # (B, S)
        return np.where(real, np.take_along_axis(alpha, source, axis=1), 0.0).astype(alpha.dtype)
    if rng is None:
        raise ValueError("mode 'permuted' needs rng (a numpy Generator)")
    keys = np.where(real, rng.random((B, S)), 2.0)  # padded positions sort last
    order = np.argsort(keys, axis=1)  # (B, S): a random permutation of the real positions first
    out = np.zeros_like(alpha)
    np.put_along_axis(out, order, alpha, axis=1)  # real weights land on shuffled real positions
    return out


class Seq2Seq:
    """GRU encoder-decoder for token sequences, optionally with Bahdanau attention.

    Parameters
    ----------
    vocab_size : int
        ``V`` (source and target share the token ids, as in the copy task).
    emb_size : int
        ``E``.
    hidden_size : int
        ``H`` (encoder and decoder).
    attention : bool
        Bahdanau attention in the decoder, or the plain bottleneck model.
    d_attn : int
        ``A``, the additive-attention width (ignored without attention).
    seed : int
        Seeds the initialisation (PyTorch-like uniform ranges).
    dtype : numpy dtype
        float32 for training, float64 for gradient checks.

    Notes
    -----
    The weights live in the dict ``params``: ``src_emb`` (V, E), ``enc_*``
    and ``dec_*`` GRU weights (see :mod:`attn.training.gru`; ``dec_W_ih`` is
    (3H, E + H) with attention: columns ``[:E]`` for the embedding, ``[E:]``
    for the context), ``tgt_emb`` (V, E), ``W_a`` (A, H), ``U_a`` (A, H),
    ``v_a`` (A,), ``W_out`` (V, H), ``W_ctx`` (V, H) (attention only: the
    context's share of the logits), ``b_out`` (V,).
    """

    def __init__(self, vocab_size, emb_size, hidden_size, attention, d_attn=16, seed=0, dtype=np.float32):
        rng = np.random.default_rng(seed)
        V, E, H = vocab_size, emb_size, hidden_size
        self.V, self.E, self.H, self.attention = V, E, H, bool(attention)
        p = {"src_emb": rng.standard_normal((V, E)).astype(dtype),
             "tgt_emb": rng.standard_normal((V, E)).astype(dtype)}
        p.update({"enc_" + k: v for k, v in init_gru(E, H, rng, dtype).items()})
        p.update({"dec_" + k: v for k, v in init_gru(E + (H if attention else 0), H, rng, dtype).items()})
        if attention:
            self.A = d_attn
            p["W_a"] = rng.uniform(-1, 1, (d_attn, H)).astype(dtype) / np.sqrt(H).astype(dtype)
            p["U_a"] = rng.uniform(-1, 1, (d_attn, H)).astype(dtype) / np.sqrt(H).astype(dtype)
            p["v_a"] = rng.uniform(-1, 1, (d_attn,)).astype(dtype) / np.sqrt(d_attn).astype(dtype)
        p["W_out"] = rng.uniform(-1, 1, (V, H)).astype(dtype) / np.sqrt(H).astype(dtype)
        if attention:
            p["W_ctx"] = rng.uniform(-1, 1, (V, H)).astype(dtype) / np.sqrt(H).astype(dtype)
        p["b_out"] = np.zeros(V, dtype=dtype)
        self.params = p

    def n_params(self) -> int:
        """Number of scalar parameters."""
        return int(sum(v.size for v in self.params.values()))

    def _gru(self, prefix):
        return {k: self.params[prefix + k] for k in ("W_ih", "W_hh", "b_ih", "b_hh")}

    def _encode(self, src, src_len):
        B, S = src.shape
        mask_bs = padding_mask(src_len, S)  # (B, S) True = real token
        x = self.params["src_emb"][src.T]  # (S, B, E)
        h0 = np.zeros((B, self.H), dtype=x.dtype)
        hs, cache = gru_forward(x, h0, self._gru("enc_"), mask_bs.T)  # (S, B, H)
        return hs, cache, mask_bs

    # ------------------------------------------------------------------ training
    def loss_and_grads(self, src, src_len, tgt_in, tgt_out, tgt_len):
        """Teacher-forced cross-entropy and its gradient for every parameter.

        Parameters
        ----------
        src : ndarray of int, shape (B, S)
            Source tokens, padded after ``src_len``.
        src_len : ndarray of int, shape (B,)
        tgt_in : ndarray of int, shape (B, T)
            Decoder inputs (start token, then the target shifted right).
        tgt_out : ndarray of int, shape (B, T)
            Tokens to predict.
        tgt_len : ndarray of int, shape (B,)
            Positions ``>= tgt_len`` are padding and cost nothing.

        Returns
        -------
        loss : float
            :math:`-\\frac{1}{N}\\sum_{b,t<L_b} \\log p(y_{b,t})`, N real target tokens.
        grads : dict of ndarray
            Same keys and shapes as ``params``.
        """
        P, V, H = self.params, self.V, self.H
        src = check_tokens(src, "src", V)
        tgt_in = check_tokens(tgt_in, "tgt_in", V)
        tgt_out = check_tokens(tgt_out, "tgt_out", V)
        B, S = src.shape
        if tgt_in.shape != tgt_out.shape or tgt_in.shape[0] != B:
            raise ValueError(f"tgt_in has shape {tgt_in.shape} and tgt_out "
                             f"{tgt_out.shape}; expected both (B, T) with B = {B} from src")
        T = tgt_in.shape[1]
        src_len = check_lengths(src_len, "src_len", B, S)
        tgt_len = check_lengths(tgt_len, "tgt_len", B, T)
        dtype = P["W_out"].dtype

        enc_hs, enc_cache, src_mask = self._encode(src, src_len)  # (S, B, H)
        y = P["tgt_emb"][tgt_in.T]  # (T, B, E)
        s0 = enc_hs[-1]  # (B, H)
        if self.attention:
            states, dec_cache = self._attn_decoder_forward(y, s0, enc_hs, src_mask)
        else:
            states, dec_cache = gru_forward(y, s0, self._gru("dec_"))  # (T, B, H)

        # Output layer and masked cross-entropy, all steps at once.
        flat = states.reshape(T * B, H)
        logits = flat @ P["W_out"].T + P["b_out"]  # (T*B, V)
        if self.attention:
            ctx_flat = dec_cache["contexts"].reshape(T * B, H)
            logits += ctx_flat @ P["W_ctx"].T
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        target = tgt_out.T.reshape(-1)  # (T*B,)
        weight = padding_mask(tgt_len, T).T.reshape(-1).astype(dtype)  # (T*B,) 1 on real tokens
        n_real = weight.sum()
        rows = np.arange(T * B)
        loss = float(-(np.log(probs[rows, target] + np.finfo(dtype).tiny) * weight).sum() / n_real)
        d_logits = probs
        d_logits[rows, target] -= 1.0
        d_logits *= (weight / n_real)[:, None]  # (T*B, V)

        g = {"W_out": d_logits.T @ flat, "b_out": d_logits.sum(axis=0)}
        d_states = (d_logits @ P["W_out"]).reshape(T, B, H)
        if self.attention:
            g["W_ctx"] = d_logits.T @ ctx_flat
            dec_cache["d_ctx_out"] = (d_logits @ P["W_ctx"]).reshape(T, B, H)
            dy, ds0, d_enc_hs = self._attn_decoder_backward(d_states, dec_cache, g)
        else:
            dy, ds0, dec_g = gru_backward(d_states, dec_cache)
            g.update({"dec_" + k: v for k, v in dec_g.items()})
            d_enc_hs = np.zeros_like(enc_hs)
        d_enc_hs[-1] += ds0
        dx, _, enc_g = gru_backward(d_enc_hs, enc_cache)
        g.update({"enc_" + k: v for k, v in enc_g.items()})
        g["tgt_emb"] = embedding_backward(dy, tgt_in.T, V)  # (V, E); dy is (T, B, E)
        g["src_emb"] = embedding_backward(dx, src.T, V)  # (V, E); dx is (S, B, E)
        return loss, {k: g[k] for k in P}

    def _attn_decoder_forward(self, y, s, enc_hs, src_mask):
        P, E, H = self.params, self.E, self.H
        T, B, _ = y.shape
        W_ih = P["dec_W_ih"]
        W_ie, W_ic = W_ih[:, :E], W_ih[:, E:]  # (3H, E), (3H, H)
        keys = np.ascontiguousarray(enc_hs.transpose(1, 0, 2))  # (B, S, H)
        keys_proj = keys @ P["U_a"].T  # (B, S, A): U_a h_i, once per sequence
        y_gates = (y.reshape(T * B, E) @ W_ie.T + P["dec_b_ih"]).reshape(T, B, 3 * H)
        states = np.empty((T, B, H), dtype=y.dtype)
        prev = np.empty_like(states)
        contexts = np.empty_like(states)
        queries = np.empty((T, B, self.A), dtype=y.dtype)
        alphas = np.empty((T, B, keys.shape[1]), dtype=y.dtype)
        cells = []
        for t in range(T):
            prev[t] = s
            q = s @ P["W_a"].T  # (B, A): W_a s_{t-1}
            alpha = _masked_softmax(additive_scores(q, keys_proj, P["v_a"]), src_mask)  # (B, S)
            c = (alpha[:, None, :] @ keys)[:, 0, :]  # (B, H)
            s, cache = cell_forward(y_gates[t] + c @ W_ic.T, s, P["dec_W_hh"], P["dec_b_hh"])
            queries[t], alphas[t], contexts[t], states[t] = q, alpha, c, s
            cells.append(cache)
        return states, {"y": y, "keys": keys, "keys_proj": keys_proj, "prev": prev, "contexts": contexts,
                        "queries": queries, "alphas": alphas, "cells": cells}

    def _attn_decoder_backward(self, d_states, cache, g):
        P, E, H = self.params, self.E, self.H
        T, B, _ = d_states.shape
        keys, keys_proj = cache["keys"], cache["keys_proj"]  # (B, S, H), (B, S, A)
        W_ic = P["dec_W_ih"][:, E:]  # (3H, H)
        v_a, W_a = P["v_a"], P["W_a"]
        dtype = d_states.dtype
        dxg = np.empty((T, B, 3 * H), dtype=dtype)
        dhg = np.empty_like(dxg)
        d_ctx = np.empty((T, B, H), dtype=dtype)
        d_q = np.empty((T, B, self.A), dtype=dtype)
        g_pre = np.zeros_like(keys_proj)  # sum_t d_e_t * (1 - tanh^2); times v_a = dL/d(U_a h_i)
        buf = np.empty_like(keys_proj)  # (B, S, A), reused at every step
        d_v = np.zeros_like(v_a)
        ds = np.zeros((B, H), dtype=dtype)
        for t in range(T - 1, -1, -1):
            ds = ds + d_states[t]
            dxg[t], dhg[t], ds_prev = cell_backward(ds, cache["cells"][t], P["dec_W_hh"])
            dc = dxg[t] @ W_ic + cache["d_ctx_out"][t]  # (B, H): via the GRU input and the logits
            d_ctx[t] = dc
            alpha = cache["alphas"][t]  # (B, S)
            d_alpha = (keys @ dc[:, :, None])[:, :, 0]  # (B, S)
            d_e = alpha * (d_alpha - (alpha * d_alpha).sum(axis=1, keepdims=True))  # softmax backward
            th = np.tanh(np.add(keys_proj, cache["queries"][t][:, None, :], out=buf), out=buf)  # recomputed
            d_v += th.reshape(-1, self.A).T @ d_e.reshape(-1)
            one_minus = np.subtract(1.0, np.multiply(th, th, out=buf), out=buf)  # (B, S, A): 1 - tanh^2
            d_q[t] = dq = (d_e[:, None, :] @ one_minus)[:, 0, :] * v_a  # (B, A)
            g_pre += np.multiply(one_minus, d_e[:, :, None], out=buf)
            ds = ds_prev + dq @ W_a
        d_keys_proj = g_pre * v_a  # (B, S, A)
        TB = T * B
        dxg2, dhg2 = dxg.reshape(TB, 3 * H), dhg.reshape(TB, 3 * H)
        y2 = cache["y"].reshape(TB, E)
        g["dec_W_ih"] = np.concatenate([dxg2.T @ y2, dxg2.T @ cache["contexts"].reshape(TB, H)], axis=1)
        g["dec_W_hh"] = dhg2.T @ cache["prev"].reshape(TB, H)
        g["dec_b_ih"] = dxg2.sum(axis=0)
        g["dec_b_hh"] = dhg2.sum(axis=0)
        g["W_a"] = d_q.reshape(TB, self.A).T @ cache["prev"].reshape(TB, H)
        g["U_a"] = d_keys_proj.reshape(-1, self.A).T @ keys.reshape(-1, H)
        g["v_a"] = d_v
        dy = (dxg2 @ P["dec_W_ih"][:, :E]).reshape(T, B, E)
        # d keys = sum_t alpha_t^T dc_t (context path) + dK_proj U_a (score path)
        alphas_b = cache["alphas"].transpose(1, 2, 0)  # (B, S, T)
        d_keys = alphas_b @ d_ctx.transpose(1, 0, 2) + d_keys_proj @ P["U_a"]  # (B, S, H)
        return dy, ds, np.ascontiguousarray(d_keys.transpose(1, 0, 2))

    # ------------------------------------------------------------------ inference
    def greedy_decode(self, src, src_len, out_len, bos, attention_mode="learned", rng=None,
                      return_weights=False):
        """Greedy decoding: feed back the arg-max token at every step.

        Parameters
        ----------
        src : ndarray of int, shape (B, S)
        src_len : ndarray of int, shape (B,)
        out_len : int
            Number of steps ``T`` to decode.
        bos : int
            Start token fed at the first step.
        attention_mode : {"learned", "uniform", "permuted", "shifted"}
            Replace the learned weights at every step (ablation, see
            :func:`replace_weights`); attention models only.
        rng : numpy Generator, needed for ``"permuted"``
        return_weights : bool

        Returns
        -------
        tokens : ndarray of int, shape (B, T)
        weights : ndarray, shape (B, T, S)
            Only if ``return_weights`` (attention models).
        """
        P, V, E = self.params, self.V, self.E
        src = check_tokens(src, "src", V)
        B, S = src.shape
        src_len = check_lengths(src_len, "src_len", B, S)
        if attention_mode != "learned" and not self.attention:
            raise ValueError(f"attention_mode {attention_mode!r} needs an attention model")
        enc_hs, _, src_mask = self._encode(src, src_len)
        s = enc_hs[-1]
        W_ih = P["dec_W_ih"]
        token_gates = P["tgt_emb"] @ W_ih[:, :E].T + P["dec_b_ih"]  # (V, 3H): every token's input gates
        if self.attention:
            W_ic, W_ctx = W_ih[:, E:], P["W_ctx"]
            keys = np.ascontiguousarray(enc_hs.transpose(1, 0, 2))  # (B, S, H)
            keys_proj = keys @ P["U_a"].T  # (B, S, A)
        tokens = np.empty((B, out_len), dtype=np.int64)
        weights = np.zeros((B, out_len, S), dtype=s.dtype) if return_weights else None
        prev_tok = np.full(B, bos)
        for t in range(out_len):
            x_gates = token_gates[prev_tok]
            if self.attention:
                alpha = _masked_softmax(additive_scores(s @ P["W_a"].T, keys_proj, P["v_a"]), src_mask)
                alpha = replace_weights(alpha, attention_mode, src_len, rng)
                if return_weights:
                    weights[:, t] = alpha
                c = (alpha[:, None, :] @ keys)[:, 0, :]  # (B, H)
                x_gates = x_gates + c @ W_ic.T
            s, _ = cell_forward(x_gates, s, P["dec_W_hh"], P["dec_b_hh"])
            logits = s @ P["W_out"].T + P["b_out"]  # (B, V)
            if self.attention:
                logits += c @ W_ctx.T
            prev_tok = tokens[:, t] = np.argmax(logits, axis=1)
        return (tokens, weights) if return_weights else tokens

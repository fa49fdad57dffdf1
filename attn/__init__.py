"""attn: attention mechanisms and transformer pieces written from scratch in NumPy.

The modules of this folder are what the lessons and Activity 4 grade; they never import
:mod:`attn.training`, which holds the trained models, their backward passes and their runs.

Every public function documents the shape of each array it takes and returns, and checks its array
arguments: a wrong number of axes, a size that disagrees with another argument, a non-boolean mask,
NaN or infinity raise ``ValueError`` naming the argument and its shape (and, for a shape error, the
expected shape); nothing is broadcast silently. (The step helpers the training models call on their
own arrays, ``classic.additive_scores`` and the caches of :mod:`attn.decoder`, and the timing
baseline ``measure.bare_dense_attention`` say in their docstrings that they check nothing.)

The Activity 4 functions of :mod:`attn.core`, :mod:`attn.multihead` and :mod:`attn.encoder` check
their inputs once, at their door (:mod:`attn._checks`), then call their kernel: the function of
the same module named with a leading underscore (``core._attention`` for
``scaled_dot_product_attention``), which is the formula alone and checks nothing. The encoder
and decoder blocks call the kernels of the layers they contain, and so does the forward pass of
the training models.
"""
from . import experiments, prose
from .classic import additive_attention, dot_attention, general_attention
from .core import causal_mask, masked_softmax, padding_mask, scaled_dot_product_attention, softmax
from .encoder import ffn, layer_norm, transformer_encoder_block
from .multihead import MultiHeadAttention
from .multihead_luong import multihead_general_attention
from .plotting import ascii_heatmap, heatmap, panels, use_style
from .positional import positional_encoding, positional_frequencies
from .self_attention import SelfAttention

__all__ = [
    "softmax",
    "masked_softmax",
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "additive_attention",
    "dot_attention",
    "general_attention",
    "multihead_general_attention",
    "heatmap",
    "panels",
    "use_style",
    "ascii_heatmap",
    "SelfAttention",
    "MultiHeadAttention",
    "layer_norm",
    "ffn",
    "transformer_encoder_block",
    "positional_encoding",
    "positional_frequencies",
    "prose",
    "experiments",
]
__version__ = "0.1.0"

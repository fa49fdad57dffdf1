"""Training: the trained models, their hand-written backward passes, Adam, and the experiments.

Nothing in the graded modules of :mod:`attn` imports this package (the import contracts, pyproject.toml).
"""
from .gru import gru_backward, gru_forward, init_gru
from .optim import Adam, clip_grad_norm, cosine_lr
from .seq2seq import Seq2Seq

__all__ = ["init_gru", "gru_forward", "gru_backward", "Seq2Seq", "Adam", "clip_grad_norm", "cosine_lr"]

"""The suite's one Hypothesis profile: no deadline (its default 200 ms per example fails a property test
on a loaded machine's slow first call, and tests never assert on time), and derandomized (every random
draw is seeded: the same examples on every run, machine and OpenBLAS kernel, so a failure reproduces).
Every property test is under tests/ and inherits this profile; none sets a deadline of its own.
"""

from hypothesis import settings

settings.register_profile("attn", deadline=None, derandomize=True)
settings.load_profile("attn")

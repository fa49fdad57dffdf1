"""The site's rule for numbers in prose (attn.prose): decimal comma, dot for thousands."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attn.prose import fmt, num, pct, sci, table_number


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((0.50652,), "0,5065"),
        ((12345, 0), "12.345"),
        ((1234.5, 1), "1.234,5"),
        ((-0.25, 2), "\u22120,25"),
        ((-0.00001, 2), "0,00"),
        ((np.float64(2.0) ** 0.5, 3), "1,414"),
    ],
)
def test_num(args, expected):
    assert num(*args) == expected


def test_pct_and_sci():
    assert pct(0.998) == "99,8 %"
    assert pct(1.0, 0) == "100 %"
    assert sci(4.5e-05) == "4,5 × 10⁻⁵"
    assert sci(-1.234e7, 2) == "\u22121,23 × 10⁷"
    assert sci(0.0) == "0,0"


@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False), st.integers(0, 6))
def test_num_round_trips(x, digits):
    text = num(x, digits)
    back = float(text.replace(".", "").replace(",", ".").replace("\u2212", "-"))
    assert math.isclose(back, round(x, digits), abs_tol=10.0 ** -digits)
    assert "." not in text.split(",")[-1] if digits else True


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "1.0", True, np.array([1.0])])
def test_rejects_non_finite_and_non_numbers(bad):
    with pytest.raises(ValueError, match="x must be"):
        num(bad)


def test_fmt_follows_a_format_spec():
    assert fmt(-0.514, ".2f") == "\u22120,51"
    assert fmt(1234.5, ",.1f") == "1.234,5"
    assert fmt(7, "d") == "7"
    assert fmt(np.float64(0.5), ".0%") == "50%"
    with pytest.raises(ValueError, match="x must be finite"):
        fmt(float("nan"))


@pytest.mark.parametrize("x, expected", [(0.50652, "0,50652"), (-1234.5, "−1.234,5"), (0.5, "0,5"), (2.0, "2"),
                                         (-0.0, "0"), (4.5e-05, "4,500 × 10⁻⁵"), (-2.5e6, "−2,500 × 10⁶"),
                                         (float("-inf"), "−∞"), (np.inf, "∞"), (np.float64("nan"), "NaN")])
def test_table_number(x, expected):
    assert table_number(x) == expected

"""Sinusoidal positional encoding: values derived by hand, properties and validation errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn import positional_encoding, positional_frequencies


def test_position_zero_is_sin0_cos0():
    np.testing.assert_array_equal(positional_encoding(1, 6)[0], [0.0, 1.0, 0.0, 1.0, 0.0, 1.0])


@pytest.mark.parametrize("pos, j, expected", [
    (1, 0, np.sin(1.0)),            # i = 0: frequency 1
    (1, 1, np.cos(1.0)),
    (10, 2, np.sin(10 / 100.0)),    # d = 4, i = 1: 10000^(2/4) = 100
    (50, 3, np.cos(50 / 100.0)),
    (7, 0, np.sin(7.0)),
])
def test_hand_values_d4(pos, j, expected):
    assert positional_encoding(60, 4)[pos, j] == pytest.approx(expected, rel=1e-15, abs=1e-15)


def test_hand_values_d8():
    # d = 8: the pairs use 10000^(0/8, 2/8, 4/8, 6/8) = 1, 10, 100, 1000
    pe = positional_encoding(51, 8)
    expected_row = []
    for div in (1.0, 10.0, 100.0, 1000.0):
        expected_row += [np.sin(50 / div), np.cos(50 / div)]
    np.testing.assert_allclose(pe[50], expected_row, rtol=1e-13, atol=1e-15)


def test_odd_d_model_last_column_is_unpaired_sine():
    # d = 5: last column j = 4 is sin(pos / 10000^(4/5)); no cosine partner
    pe = positional_encoding(20, 5)
    assert pe.shape == (20, 5)
    np.testing.assert_allclose(pe[:, 4], np.sin(np.arange(20) / 10000 ** 0.8), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(pe[:, :4], positional_encoding(20, 5)[:, :4])


def test_frequencies_and_wavelengths():
    omega = positional_frequencies(8)
    np.testing.assert_allclose(omega, [1, 1, 0.1, 0.1, 0.01, 0.01, 0.001, 0.001], rtol=1e-14)
    np.testing.assert_allclose(2 * np.pi / omega[0], 2 * np.pi)


@settings(max_examples=60)
@given(st.integers(1, 40), st.integers(2, 64))
def test_property_pairs_on_unit_circle(max_len, d):
    pe = positional_encoding(max_len, d)
    assert pe.shape == (max_len, d) and np.all(np.abs(pe) <= 1.0)
    half = d // 2
    np.testing.assert_allclose(pe[:, 0:2 * half:2] ** 2 + pe[:, 1:2 * half:2] ** 2, 1.0, rtol=1e-12)


@settings(max_examples=40)
@given(st.integers(0, 80), st.integers(0, 40), st.sampled_from([4, 8, 16]))
def test_property_shift_is_a_rotation(pos, k, d):
    # PE[pos + k] is PE[pos] rotated pair by pair by the angle k * omega: a linear map independent of pos
    pe = positional_encoding(pos + k + 1, d)
    omega = positional_frequencies(d)[::2]
    s, c = pe[pos, 0::2], pe[pos, 1::2]
    rot_s = s * np.cos(k * omega) + c * np.sin(k * omega)
    rot_c = c * np.cos(k * omega) - s * np.sin(k * omega)
    np.testing.assert_allclose(pe[pos + k, 0::2], rot_s, atol=1e-10)
    np.testing.assert_allclose(pe[pos + k, 1::2], rot_c, atol=1e-10)


def test_error_max_len():
    with pytest.raises(ValueError, match=r"max_len must be a positive integer, got 0"):
        positional_encoding(0, 8)


def test_error_d_model():
    with pytest.raises(ValueError, match=r"d_model must be a positive integer, got 2.5"):
        positional_encoding(10, 2.5)

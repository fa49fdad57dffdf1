"""Numbers as a Brazilian Portuguese reader expects them in prose.

The site's rule (stated once on the intro page): in prose, the decimal separator is a comma,
thousands are grouped with a dot and negative numbers take the minus sign (``0,5065``, ``1.234``,
``99,8 %``, ``4,5 × 10⁻⁵``, ``−0,25``). Code cells and their printed outputs keep Python's own
notation (``0.5065``), since they are code.

Every number a page glues into prose goes through one of these functions, so the rule lives in one
place; ``tests/test_pages_static.py`` checks the glued strings.
"""
from __future__ import annotations

import math
import numbers

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _check_real(x, name: str = "x") -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        # NumPy scalars are numbers.Real; 0-d arrays are not, so .item() them first.
        raise ValueError(f"{name} must be a real number; got {type(x).__name__}")
    value = float(x)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value}")
    return value


def _swap_separators(text: str) -> str:
    # Python writes "1,234.5"; Portuguese writes "1.234,5".
    return text.replace(",", "\0").replace(".", ",").replace("\0", ".")


def _minus(text: str) -> str:
    # a value that rounds to zero has no sign; otherwise the typographic minus sign
    if text.startswith("-"):
        return text[1:] if not text.strip("-0,.") else "\u2212" + text[1:]
    return text


def num(x, digits: int = 4) -> str:
    """``x`` with ``digits`` decimal places and Portuguese separators: ``num(0.50652) == '0,5065'``.

    Integers (``digits=0``) get thousands grouped with a dot: ``num(12345, 0) == '12.345'``.
    """
    return _minus(_swap_separators(f"{_check_real(x):,.{digits}f}"))


def fmt(x, spec: str = ".2f") -> str:
    """``format(x, spec)`` with the decimal comma and minus sign: ``fmt(-0.514, ".2f") == '−0,51'``.

    The rule for numbers written *inside figures* (heatmap annotations, bar labels, legends), where
    a format spec is the natural unit; :mod:`attn.plotting` uses it for tick labels too.
    """
    value = int(x) if isinstance(x, numbers.Integral) and _check_real(x) is not None else _check_real(x)
    return _minus(_swap_separators(format(value, spec)))


def table_number(x) -> str:
    """A float in a pandas table (``display.float_format``, set by :func:`attn.use_style`).

    Up to six significant digits, as pandas prints them, with the decimal comma and minus sign:
    ``table_number(0.50652) == '0,50652'``, ``table_number(-1234.5) == '−1.234,5'``; below 10⁻⁴ or
    from 10⁶ in scientific notation (:func:`sci`, 3 digits): ``table_number(4.5e-05) == '4,500 × 10⁻⁵'``;
    a masked score ``-inf`` is ``'−∞'``.
    """
    if isinstance(x, numbers.Real) and not isinstance(x, bool) and not math.isfinite(x):
        # a masked score (-inf) is a value a table shows; pandas prints NaN itself (na_rep)
        return "NaN" if math.isnan(x) else ("\u2212∞" if x < 0 else "∞")
    value = _check_real(x)
    if value != 0.0 and not 1e-4 <= abs(value) < 1e6:
        return sci(value, 3)
    return _minus(_swap_separators(f"{value:,.6g}"))


def pct(x, digits: int = 1) -> str:
    """A fraction ``x`` as a percentage: ``pct(0.998) == '99,8 %'`` (space before ``%``, as in pt-BR)."""
    return f"{num(100.0 * _check_real(x), digits)} %"


def sci(x, digits: int = 1) -> str:
    """``x`` in scientific notation with a Unicode exponent: ``sci(4.5e-05) == '4,5 × 10⁻⁵'``."""
    value = _check_real(x)
    if value == 0.0:
        return num(0.0, digits)
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    return f"{num(float(mantissa), digits)} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"

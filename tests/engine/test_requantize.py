"""The int8 requantising epilogue (native/src/gemm_int8/requant.h) against
numpy: np.rint rounds ties to even, as onnxruntime's QuantizeLinear does, and
the float32 product of the int32 sum and the per-channel scale is what is
rounded."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.support.c_suites import CHECKS_BUILD, checks_build


class _Requant(ctypes.Structure):
    _fields_ = [("scale", ctypes.POINTER(ctypes.c_float)),
                ("bias", ctypes.POINTER(ctypes.c_int32)),
                ("colsum", ctypes.POINTER(ctypes.c_int32)),
                ("a_zero_point", ctypes.c_int32), ("c_zero_point", ctypes.c_int32),
                ("lo", ctypes.c_uint8), ("hi", ctypes.c_uint8)]


@pytest.fixture(scope="module")
def requantize():
    checks_build(["aclengine"])
    lib = ctypes.CDLL(str(CHECKS_BUILD / "libaclengine.so"))
    fn = lib.acl_requantize_u8
    fn.argtypes = [ctypes.POINTER(_Requant), ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                   ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    fn.restype = None

    def run(acc, scale, bias, colsum, za, zc, lo=0, hi=255):
        m, n = acc.shape
        out = np.zeros((m, n), np.uint8)
        rq = _Requant(scale.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                      bias.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                      colsum.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), za, zc, lo, hi)
        fn(ctypes.byref(rq), m, n, acc.ctypes.data, n, out.ctypes.data, n)
        return out
    return run


def _expected(acc, scale, bias, colsum, za, zc, lo=0, hi=255):
    sums = (acc.astype(np.int64) - za * colsum.astype(np.int64) + bias).astype(np.float32)
    return np.clip(np.rint(sums * scale) + zc, lo, hi).astype(np.uint8)


@pytest.mark.parametrize("za, zc", [(0, 0), (128, 128), (255, 3)])
def test_matches_numpy_rint(requantize, za, zc):
    rng = np.random.default_rng(za + zc)
    m, n = 7, 19
    acc = rng.integers(-200_000, 200_000, (m, n), dtype=np.int32)
    scale = rng.uniform(1e-4, 2e-3, n).astype(np.float32)
    bias = rng.integers(-5000, 5000, n, dtype=np.int32)
    colsum = rng.integers(-2000, 2000, n, dtype=np.int32)
    got = requantize(acc, scale, bias, colsum, za, zc)
    np.testing.assert_array_equal(got, _expected(acc, scale, bias, colsum, za, zc))
    assert 0 < np.count_nonzero((got > 0) & (got < 255))  # not all saturated


def test_ties_round_to_even_and_saturate(requantize):
    # Odd sums times 0.5 and 0.25 land exactly on halves: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2.
    acc = np.array([[1, 3, 5, -1, -3, -5, 2, 6, 10, 1000, -1000]], np.int32)
    n = acc.shape[1]
    scale = np.array([0.5] * 6 + [0.25] * 3 + [0.5, 0.5], np.float32)
    zero = np.zeros(n, np.int32)
    got = requantize(acc, scale, zero, zero, 0, 10)
    assert got.tolist() == [[10, 12, 12, 10, 8, 8, 10, 12, 12, 255, 0]]
    np.testing.assert_array_equal(got, _expected(acc, scale, zero, zero, 0, 10))


def test_fused_relu_clamps_at_the_output_zero_point(requantize):
    acc = np.array([[-40, -2, 0, 2, 40, 900]], np.int32)
    n = acc.shape[1]
    scale, zero = np.full(n, 0.5, np.float32), np.zeros(n, np.int32)
    got = requantize(acc, scale, zero, zero, 0, 20, lo=20, hi=220)
    assert got.tolist() == [[20, 20, 20, 21, 40, 220]]

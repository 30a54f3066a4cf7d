"""Every algorithm x every micro-kernel agrees with onnxruntime, and every core
split gives bit-identical output (ai3-style correctness suite)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from acltuner.engine.config import ACTIVATIONS, ConvShape
from tests.conftest import engine_names, get_engine
from tests.support.conv_oracle import ort_conv, random_tensors, rel_err
from tests.support.engine_backends import splits_for

TOL = 1e-4
# Enough CPUs for the splits: under qemu only the host's CPUs 0 and 1 exist.
NCPU = 2


def _shape(**kw) -> ConvShape:
    return ConvShape(**kw)


# Shapes chosen so that every algorithm and micro-kernel finds at least one it supports.
CATALOG = [
    _shape(n=2, h=9, w=9, c=20, oc=24, kh=3, kw=3, pad_top=1, pad_left=1, pad_bottom=1,
           pad_right=1, act="relu", has_residual=True),
    _shape(n=1, h=7, w=10, c=12, oc=8, kh=1, kw=3, pad_left=1, pad_right=2, act="clip",
           act_min=-0.5, act_max=0.5),
    _shape(n=1, h=11, w=6, c=12, oc=8, kh=3, kw=1, pad_top=2, pad_bottom=0, act="silu"),
    _shape(n=1, h=6, w=9, c=8, oc=12, kh=1, kw=3, pad_left=1, pad_right=1, act="leaky_relu",
           act_alpha=0.1),
    _shape(n=1, h=9, w=5, c=8, oc=12, kh=3, kw=1, pad_top=1, pad_bottom=1, act="relu"),
    _shape(n=1, h=9, w=9, c=8, oc=16, kh=3, kw=3, pad_top=1, pad_left=1, pad_bottom=1,
           pad_right=1, act="hard_swish", act_alpha=1 / 6, act_beta=0.5),
    _shape(n=1, h=7, w=9, c=16, oc=12, kh=3, kw=3, pad_top=0, pad_left=1, pad_bottom=1,
           pad_right=0, act="relu", has_residual=True),
    _shape(n=1, h=9, w=9, c=40, oc=36, kh=1, kw=1, stride_h=2, stride_w=2, pad_top=1,
           pad_left=1, pad_bottom=0, pad_right=1),
    _shape(n=1, h=12, w=12, c=12, oc=24, kh=3, kw=3, stride_h=2, stride_w=2, pad_top=1,
           pad_left=1, pad_bottom=1, pad_right=1, group=12, act="relu"),
    _shape(n=1, h=8, w=8, c=8, oc=16, kh=1, kw=1, act="sigmoid"),
    _shape(n=1, h=8, w=8, c=16, oc=16, kh=1, kw=1, has_residual=True, act="mish"),
    _shape(n=1, h=10, w=10, c=3, oc=8, kh=2, kw=2, act="hard_sigmoid", act_alpha=0.2,
           act_beta=0.5),
    _shape(n=1, h=10, w=10, c=12, oc=16, kh=3, kw=3, pad_top=1, pad_left=0, pad_bottom=2,
           pad_right=1, group=4),
    _shape(n=1, h=12, w=12, c=64, oc=72, kh=3, kw=3, dil_h=2, dil_w=2, pad_top=2, pad_left=2,
           pad_bottom=2, pad_right=2),
    _shape(n=1, h=13, w=13, c=64, oc=40, kh=3, kw=3, pad_top=1, pad_left=1, pad_bottom=1,
           pad_right=1, has_residual=True, act="relu"),
    # ASPP-like dilated 3x3s whose border pixels read fewer taps: at rate 4 on
    # 8x8 each quadrant reads 4 taps, at rate 9 every pixel reads only the
    # centre; grouped, over a batch of two, with a pad past the kernel's reach
    # so that the outer rows and columns read no input at all.
    _shape(n=1, h=8, w=8, c=24, oc=20, kh=3, kw=3, dil_h=4, dil_w=4, pad_top=4, pad_left=4,
           pad_bottom=4, pad_right=4, act="relu", has_residual=True),
    _shape(n=1, h=8, w=7, c=16, oc=16, kh=3, kw=3, dil_h=9, dil_w=9, pad_top=9, pad_left=9,
           pad_bottom=9, pad_right=9),
    _shape(n=2, h=6, w=7, c=16, oc=24, kh=3, kw=2, dil_h=2, dil_w=3, pad_top=6, pad_left=1,
           pad_bottom=3, pad_right=5, group=4, act="silu", has_residual=True),
    # Depthwise with whole channel blocks: interior pixel runs of every length
    # (15 - 2 = 13 = 8 + 4 + 1 with AVX-512, 4 + 4 + 4 + 1 with NEON) next to
    # the bordered pixels; then a strided 5x5 over a batch of two.
    _shape(n=1, h=9, w=15, c=32, oc=32, kh=3, kw=3, pad_top=1, pad_left=1, pad_bottom=1,
           pad_right=1, group=32, act="clip", act_min=0.0, act_max=6.0, has_residual=True),
    _shape(n=2, h=11, w=23, c=16, oc=16, kh=5, kw=5, stride_h=2, stride_w=2, pad_top=2,
           pad_left=2, pad_bottom=2, pad_right=2, group=16, act="silu"),
    # Narrow groups as ResNeXt's and RegNet's (cg == ocg): 6 groups of 8, two
    # per AVX-512 block, one per AVX2 / NEON block (its inputs broadcast); 5
    # groups of 4 leave a partial last block on every ISA; 2 groups of 16 are
    # one AVX-512 block each.
    _shape(n=1, h=10, w=13, c=48, oc=48, kh=3, kw=3, pad_top=1, pad_left=1, pad_bottom=1,
           pad_right=1, group=6, act="relu", has_residual=True),
    _shape(n=2, h=7, w=9, c=20, oc=20, kh=3, kw=3, stride_h=2, stride_w=2, pad_top=1,
           pad_left=1, pad_bottom=1, pad_right=1, group=5, act="silu", has_residual=True),
    _shape(n=1, h=9, w=11, c=32, oc=32, kh=3, kw=3, dil_h=2, dil_w=2, pad_top=2, pad_left=2,
           pad_bottom=2, pad_right=2, group=2, act="clip", act_min=-0.5, act_max=0.5),
    # Winograd's larger kernels: ResNetXY's 4x4 and 6x6 with SAME_UPPER's
    # uneven pads, and a 5x5; every output tile size leaves a partial tile.
    _shape(n=1, h=9, w=8, c=12, oc=10, kh=4, kw=4, pad_top=1, pad_left=1, pad_bottom=2,
           pad_right=2, act="relu", has_residual=True),
    _shape(n=1, h=8, w=9, c=8, oc=12, kh=5, kw=5, pad_top=2, pad_left=2, pad_bottom=2,
           pad_right=2, act="silu"),
    _shape(n=2, h=10, w=7, c=8, oc=8, kh=6, kw=6, pad_top=2, pad_left=2, pad_bottom=3,
           pad_right=3, has_residual=True),
    # A first layer (C = 3, 7x7, stride 2) with enough output pixels that im2col
    # runs several blocks per worker.
    _shape(n=1, h=40, w=38, c=3, oc=16, kh=7, kw=7, stride_h=2, stride_w=2, pad_top=3,
           pad_left=3, pad_bottom=3, pad_right=2, act="relu", has_residual=True),
    # Few output channels, packed with a kernel row's run into each vector
    # (direct_dot, which takes at most 4 on AVX2 and NEON): a one-channel head
    # whose run (5 x 10 floats) ends in a partial vector, and 3 channels at
    # stride 2 over a batch of two.
    _shape(n=1, h=9, w=20, c=10, oc=1, kh=3, kw=5, pad_top=1, pad_left=2, pad_bottom=1,
           pad_right=2, act="sigmoid", has_residual=True),
    _shape(n=2, h=8, w=13, c=4, oc=3, kh=3, kw=3, stride_w=2, pad_top=1, pad_left=1,
           pad_bottom=1, pad_right=1, act="relu"),
    # ConvTranspose: a decoder's 4x4 / stride 2 / pad 1 upsampling; stride 3 by 2
    # with output padding, dilation and groups; depthwise 3x3 / stride 2.
    _shape(n=2, h=7, w=6, c=12, oc=16, kh=4, kw=4, stride_h=2, stride_w=2, pad_top=1,
           pad_left=1, pad_bottom=1, pad_right=1, act="relu", has_residual=True, transposed=True),
    _shape(n=1, h=5, w=8, c=8, oc=12, kh=3, kw=2, stride_h=3, stride_w=2, dil_h=2, pad_top=1,
           pad_right=2, group=2, act="clip", act_min=-0.5, act_max=0.5, transposed=True,
           out_pad_h=2, out_pad_w=1),
    _shape(n=1, h=6, w=5, c=16, oc=16, kh=3, kw=3, stride_h=2, stride_w=2, pad_top=1,
           pad_left=1, pad_bottom=1, pad_right=1, group=16, transposed=True, out_pad_h=1,
           out_pad_w=1),
]


def _pairs(engine) -> list[tuple[str, str | None]]:
    kernels = engine.ukernels()
    return [(a, uk) for a, uses in engine.algorithms() for uk in (kernels if uses else [None])]


def _verify(engine, shape: ConvShape, pairs, seed: int) -> int:
    """Checks every supported (algorithm, micro-kernel) of `pairs` on one random
    instance of `shape`; returns how many ran."""
    supported = [(a, uk) for a, uk in pairs if engine.check(shape, a, uk) is None]
    if not supported:
        return 0
    rng = np.random.default_rng(seed)
    x, w, b, r = random_tensors(shape, rng, with_bias=seed % 3 != 0)
    ref = ort_conv(shape, x, w, b, r)
    splits = splits_for(NCPU)
    for algorithm, ukernel in supported:
        outs = engine.run(shape, algorithm, ukernel, x, w, b, r, splits)
        err = rel_err(outs[0], ref)
        assert err <= TOL, f"{algorithm}/{ukernel} on {shape}: relative error {err:.2e}"
        for (weights, workloads), y in zip(splits[1:], outs[1:]):
            assert np.array_equal(y, outs[0]), (
                f"{algorithm}/{ukernel} on {shape}: split {weights}/w{workloads} "
                f"changed the output")
    return len(supported)


def pytest_generate_tests(metafunc):
    if "pair" in metafunc.fixturenames:
        params, ids = [], []
        for name in engine_names():
            for algo, uk in _pairs(get_engine(name)):
                params.append((name, algo, uk))
                ids.append(f"{name}-{algo}-{uk or 'direct'}")
        metafunc.parametrize("pair", params, ids=ids)


def test_every_algorithm_and_ukernel(pair):
    name, algorithm, ukernel = pair
    engine = get_engine(name)
    ran = sum(_verify(engine, shape, [(algorithm, ukernel)], seed=i)
              for i, shape in enumerate(CATALOG))
    if not ran:
        pytest.skip(f"never applies: {engine.check(CATALOG[0], algorithm, ukernel)}")


@pytest.mark.parametrize("engine_name", engine_names())
def test_catalog_covers_every_algorithm_and_ukernel(engine_name):
    engine = get_engine(engine_name)
    covered = [(a, uk) for a, uk in _pairs(engine) for shape in CATALOG
               if engine.check(shape, a, uk) is None]
    assert {a for a, _ in covered} == {a for a, _ in engine.algorithms()}
    assert {uk for _, uk in covered} - {None} == set(engine.ukernels())


@st.composite
def conv_shapes(draw, max_hw: int = 12, max_c: int = 24, transposed: bool = False) -> ConvShape:
    kind = draw(st.sampled_from(["dense", "dense", "depthwise", "grouped"]))
    kh, kw = draw(st.sampled_from([(1, 1), (3, 3), (3, 3), (1, 3), (3, 1), (2, 2), (5, 5),
                                   (4, 2), (7, 7)]))
    if kind == "dense":
        group = 1
        c = draw(st.integers(1, max_c))
        oc = draw(st.integers(1, max_c))
    elif kind == "depthwise":
        c = group = draw(st.integers(1, max_c))
        oc = c * draw(st.integers(1, 2))
    else:
        group = draw(st.integers(2, 4))
        c = group * draw(st.integers(1, max_c // 4))
        oc = group * draw(st.integers(1, max_c // 4))
    stride = st.integers(1, 3)
    dil = st.sampled_from([1, 1, 1, 2, 3])
    pad = st.integers(0, 3)
    act = draw(st.sampled_from(ACTIVATIONS))
    shape = dict(n=draw(st.integers(1, 2)), h=draw(st.integers(1, max_hw)),
                 w=draw(st.integers(1, max_hw)), c=c, oc=oc, kh=kh, kw=kw,
                 stride_h=draw(stride), stride_w=draw(stride), dil_h=draw(dil),
                 dil_w=draw(dil), pad_top=draw(pad), pad_left=draw(pad),
                 pad_bottom=draw(pad), pad_right=draw(pad), group=group, act=act,
                 act_min=-0.3 if act == "clip" else 0.0, act_max=0.4 if act == "clip" else 0.0,
                 act_alpha=0.2, act_beta=0.5, has_residual=draw(st.booleans()))
    if transposed:  # output padding below the stride, as onnxruntime needs
        shape.update(transposed=True, out_pad_h=draw(st.integers(0, shape["stride_h"] - 1)),
                     out_pad_w=draw(st.integers(0, shape["stride_w"] - 1)))
        shape = ConvShape(**shape)
        assume(min(shape.out_hw) >= 1)
        return shape
    oh = (shape["h"] + shape["pad_top"] + shape["pad_bottom"] - shape["dil_h"] * (kh - 1) - 1)
    ow = (shape["w"] + shape["pad_left"] + shape["pad_right"] - shape["dil_w"] * (kw - 1) - 1)
    assume(oh >= 0 and ow >= 0)
    return ConvShape(**shape)


@pytest.mark.parametrize("engine_name", engine_names())
def test_random_shapes_all_algorithms(engine_name):
    engine = get_engine(engine_name)
    pairs = _pairs(engine)
    examples = 250 if engine_name == "host" else 100

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(shape=conv_shapes(max_hw=12 if engine_name == "host" else 7), seed=st.integers(0, 99))
    def check(shape, seed):
        assert _verify(engine, shape, pairs, seed) >= 1, \
            f"not even the reference algorithm accepts {shape}"

    check()


@pytest.mark.parametrize("engine_name", engine_names())
def test_random_transposed_shapes_all_algorithms(engine_name):
    """ConvTranspose: strides 1-3, pads, output padding, dilations, groups and
    depthwise, every algorithm that takes them against onnxruntime."""
    engine = get_engine(engine_name)
    pairs = _pairs(engine)

    @settings(max_examples=80 if engine_name == "host" else 30, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(shape=conv_shapes(max_hw=8 if engine_name == "host" else 5, transposed=True),
           seed=st.integers(0, 99))
    def check(shape, seed):
        assert _verify(engine, shape, pairs, seed) >= 3, (
            f"reference, deconv_col2im and deconv_phase must all run {shape}")

    check()

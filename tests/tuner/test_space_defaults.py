"""The search space and the ArmNN-rule baseline."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from acltuner.armnn_default import armnn_default, armnn_method, armnn_placement, armnn_ukernel
from acltuner.bench.layers import LAYERS
from acltuner.engine import native
from acltuner.engine.config import ConvShape
from acltuner.tuner.space import SearchSpace, placements

ODROID = [[0, 1], [2, 3, 4, 5]]       # 2x A53 + 4x A73
EDGE_R = [[0, 1, 2, 3], [4, 5]]       # 4x A53 + 2x A72
LAYER = dict(LAYERS)
UKERNELS = [uk.__dict__ for uk in native.ukernels()]
ALGOS = [(a, native.uses_ukernel(a)) for a in native.algorithms()]


def test_placements_are_distinct_normalised_and_cover_table1():
    edge = placements(EDGE_R, 6)
    assert len(edge) == len(set(edge))
    assert (1, 1, 1, 1, 3, 3) in edge and (0, 0, 0, 0, 1, 1) in edge
    assert (2, 2, 2, 2, 2, 2) not in edge and (0,) * 6 not in edge
    odroid = placements(ODROID, 6)
    assert (1, 1, 2, 2, 2, 2) in odroid  # Table 1's direct-convolution split on the N2+
    # Within a cluster only the first k cores are used: cores of a cluster are alike.
    assert (0, 0, 0, 1, 0, 0) not in odroid


def _space(shape, clusters=((0,), (1,))):
    return SearchSpace(shape, clusters, 2, ALGOS, [u["name"] for u in UKERNELS], native.check)


def test_space_holds_only_runnable_configs():
    space = _space(LAYER["resnet18.layer4"])
    configs = space.all()
    assert len(configs) == space.size == len(set(configs))
    assert {c.algorithm for c in configs} >= {"im2col", "indirect", "winograd_4x4_3x3"}
    assert "reference" not in {c.algorithm for c in configs}
    for c in configs[:: max(1, space.size // 50)]:
        assert native.check(space.shape, c.algorithm, c.ukernel) is None


def test_random_picks_choose_the_algorithm_first():
    """A first layer's direct_nhwc is one (algorithm, micro-kernel) pair against
    im2col's one per micro-kernel: it still gets its share of random picks."""
    space = _space(LAYER["vgg16.conv1_1"], clusters=((0, 1),))
    picks = space.sample(np.random.default_rng(0), 60)
    counts = {a: sum(c.algorithm == a for c in picks) for a in {a for a, _ in space.pairs}}
    assert "direct_nhwc" in counts and "im2col" in counts
    assert min(counts.values()) >= 60 // len(counts) // 2, counts


def test_grouped_blocks_offer_grouped_direct():
    """ResNeXt's 32 groups of 16 channels at 14x14: the tuner may pick the direct
    kernel over whole channel blocks, on one core or both; not for group 1."""
    resnext = ConvShape(n=1, h=14, w=14, c=512, oc=512, kh=3, kw=3, pad_top=1, pad_left=1,
                        pad_bottom=1, pad_right=1, group=32)
    configs = [c for c in _space(resnext, clusters=((0, 1),)).all()
               if c.algorithm == "grouped_direct"]
    assert {c.core_weights for c in configs} == {(1, 0), (1, 1)}
    assert native.check(replace(resnext, group=1), "grouped_direct", None) is not None


def test_heads_give_every_other_algorithm_the_defaults_cores_and_its_rule_kernel():
    resnext = ConvShape(n=1, h=14, w=14, c=512, oc=512, kh=3, kw=3, pad_top=1, pad_left=1,
                        pad_bottom=1, pad_right=1, group=32)
    space = _space(resnext, clusters=((0, 1),))
    default = armnn_default(resnext, [[0, 1]], [1.0], 2, UKERNELS, native.isa(),
                            native.uses_ukernel, native.check)

    def kernel_of(algorithm):
        return armnn_ukernel(resnext, algorithm, UKERNELS, native.isa(), native.check)

    heads = space.heads(default, kernel_of)
    algorithms = {a for a, _ in space.pairs}
    assert [h.algorithm for h in heads] == sorted(algorithms - {default.algorithm},
                                                  key=[a for a, _ in space.pairs].index)
    assert "grouped_direct" in algorithms and "grouped_channel_block" in algorithms
    pairs = set(space.pairs)
    for h in heads:
        assert (h.core_weights, h.workloads) == (default.core_weights, default.workloads)
        assert (h.algorithm, h.ukernel) in pairs
        wanted = kernel_of(h.algorithm) if native.uses_ukernel(h.algorithm) else None
        assert h.ukernel == wanted or (h.algorithm, wanted) not in pairs


def test_sampling_is_distinct_and_respects_exclusions():
    space = _space(LAYER["resnet18.layer2.down1x1"])
    rng = np.random.default_rng(0)
    first = space.sample(rng, 50)
    assert len(set(first)) == 50
    second = space.sample(rng, 50, exclude=set(first))
    assert not set(first) & set(second)
    everything = space.sample(rng, space.size + 10)
    assert len(everything) == space.size and set(everything) == set(space.all())


def test_neighbours_change_exactly_one_part():
    space = _space(LAYER["resnet18.layer4"])
    config = space.config(space.size // 2)
    near = space.neighbours(config)
    assert len(near) == len(set(near)) == (len(space.pairs) + len(space.placements)
                                           + len(space.workloads) - 3)
    all_configs = set(space.all())
    for n in near:
        assert n in all_configs and n != config
        changed = [(n.algorithm, n.ukernel) != (config.algorithm, config.ukernel),
                   n.core_weights != config.core_weights, n.workloads != config.workloads]
        assert sum(changed) == 1
    assert space.neighbours(replace(config, workloads=5)) == []  # not of the space


@pytest.mark.parametrize("layer,method", [
    ("resnet18.conv1", "im2col"),            # 7x7 stride 2: General
    ("resnet18.layer1", "winograd_4x4_3x3"),
    ("resnet18.layer4", "winograd_4x4_3x3"),  # Table 1: ArmNN picks Winograd for conv5
    ("resnet18.layer2.down1x1", "im2col"),    # strided 1x1 needs im2col in ACL
    ("vgg16.conv1_1", "im2col"),              # C_in = 3 < 16
])
def test_armnn_method_on_real_layers(layer, method):
    assert armnn_method(LAYER[layer]) == method


@pytest.mark.parametrize("kw,method", [
    (dict(kh=1, kw=1), "gemm1x1"),
    (dict(kh=3, kw=1), "winograd_4x1_3x1"),
    (dict(kh=2, kw=2), "indirect"),
    (dict(kh=5, kw=5), "im2col"),
    (dict(kh=3, kw=3, dil_h=2, dil_w=2), "im2col"),
    (dict(kh=3, kw=3, group=32, oc=32), "depthwise_channel_block"),
    (dict(kh=3, kw=3, group=32, oc=64), "depthwise_pixel"),   # channel multiplier 2
    (dict(kh=9, kw=9, oc=16), "im2col"),
    # ConvTranspose: ACL's upsample + convolution, i.e. by phases; depthwise direct.
    (dict(kh=2, kw=2, stride_h=2, stride_w=2, transposed=True), "deconv_phase"),
    (dict(kh=4, kw=4, stride_h=2, stride_w=2, pad_top=1, pad_left=1, pad_bottom=1,
          pad_right=1, transposed=True), "deconv_phase"),
    (dict(kh=3, kw=3, group=32, oc=32, transposed=True), "deconv_depthwise"),
])
def test_armnn_method_rules(kw, method):
    shape = ConvShape(**{**dict(n=1, h=20, w=20, c=32, oc=64, kh=3, kw=3), **kw})
    assert armnn_method(shape) == method


def test_armnn_threads_follow_appendix_b():
    # Both boards: min cluster size = 2 threads, on the big cluster.
    assert armnn_placement(ODROID, [2016, 2400], 6) == (0, 0, 1, 1, 0, 0)
    assert armnn_placement(EDGE_R, [1400, 1800], 6) == (0, 0, 0, 0, 1, 1)


def test_armnn_ukernel_prefers_smallk_and_is_valid():
    isa = native.isa()
    small = ConvShape(n=1, h=32, w=32, c=8, oc=16, kh=1, kw=1)
    uk = armnn_ukernel(small, "gemm1x1", UKERNELS, isa, native.check)
    assert "-smallk-" in uk and uk.endswith(isa)
    big = LAYER["resnet18.layer3"]
    uk = armnn_ukernel(big, "winograd_4x4_3x3", UKERNELS, isa, native.check)
    assert native.check(big, "winograd_4x4_3x3", uk) is None and uk.endswith(isa)


TRANSPOSED = [ConvShape(n=1, h=40, w=40, c=64, oc=32 * g, kh=k, kw=k, stride_h=2, stride_w=2,
                        pad_top=p, pad_left=p, pad_bottom=p, pad_right=p, group=g,
                        transposed=True)
              for k, p, g in ((2, 0, 1), (4, 1, 1), (4, 1, 64))]


@pytest.mark.parametrize("shape", TRANSPOSED, ids=["k2s2", "k4s2p1", "depthwise"])
def test_transposed_space_has_the_deconv_algorithms_and_a_valid_default(shape):
    configs = _space(shape).all()
    pairs = {(c.algorithm, c.ukernel) for c in configs}
    depthwise = {"deconv_depthwise"} if shape.group == shape.c else set()
    assert {a for a, _ in pairs} == {"deconv_col2im", "deconv_phase"} | depthwise
    styles = {u["name"]: u["style"] for u in UKERNELS}
    assert "interleaved" not in {styles[uk] for a, uk in pairs if a == "deconv_phase"}
    interleaved = {u for u, style in styles.items() if style == "interleaved"}
    assert interleaved <= {uk for a, uk in pairs if a == "deconv_col2im"}
    cfg = armnn_default(shape, [[0], [1]], [1, 1], 2, UKERNELS, native.isa(),
                        native.uses_ukernel, native.check)
    assert cfg.algorithm == armnn_method(shape)
    assert native.check(shape, cfg.algorithm, cfg.ukernel) is None


@pytest.mark.parametrize("name", [n for n, _ in LAYERS])
def test_armnn_default_runs_every_layer(name):
    shape = LAYER[name]
    cfg = armnn_default(shape, [[0], [1]], [1, 1], 2, UKERNELS, native.isa(),
                        native.uses_ukernel, native.check)
    assert native.check(shape, cfg.algorithm, cfg.ukernel) is None
    assert cfg.threads == 1 and cfg.workloads == 1

"""A small ONNX graph builder shared by the zoo's models and the tests' graphs.

Weights are seeded random numbers at He scale (std sqrt(2 / fan_in)) and the
BatchNormalization statistics are random but valid (positive variance, mean
near 0), so a plain chain of layers keeps its activations O(1) (residual
networks also damp their branches: see resnet.py) and the same seed always
gives the same model.  Every node's output tensor is named after the
node, so names are unique as long as node names are.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# onnxruntime here rejects IR versions newer than 8.
IR_VERSION = 8

# With random (not measured) BN statistics the BNs do not renormalise, so a
# branch as strong as its input would double the residual sum's variance every
# block (1e8 at ResNet-101's output).  A small gamma on each branch's last BN,
# torchvision's zero_init_residual idea without the zero, keeps it O(1).
RESIDUAL_GAMMA = (0.1, 0.3)

Pads = int | tuple[int, int, int, int] | str


class GraphBuilder:
    """Appends nodes to one graph with a single NCHW float input."""

    def __init__(self, seed: int = 0, input_shape: Sequence[int | str] = (1, 3, 224, 224),
                 input_name: str = "input", opset: int = 13, ir_version: int = IR_VERSION):
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.ir_version = ir_version
        self.input = input_name
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self._input_shape = list(input_shape)
        # Channels of every tensor, so that a conv's weight shape needs no argument.
        self.channels: dict[str, int | None] = {input_name: int(input_shape[1])}

    def channels_of(self, x: str) -> int:
        """x's channel count, which the weights of a layer reading x are sized by."""
        c = self.channels[x]
        if c is None:
            raise ValueError(f"tensor '{x}' has no known channel count (a constant, or a node "
                             f"built without channels=)")
        return c

    def constant(self, name: str, value: np.ndarray) -> str:
        """An initializer; float64 (numpy's default) is stored as float32."""
        value = np.asarray(value)
        if value.dtype == np.float64:
            value = value.astype(np.float32)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: Sequence[str], name: str, channels: int | None = None,
             **attrs) -> str:
        """One node whose single output is named `name`; it keeps its first input's
        channel count (if known: not for constants) unless `channels` says otherwise."""
        self.nodes.append(helper.make_node(op, list(inputs), [name], name=name, **attrs))
        self.channels[name] = channels if channels is not None else self.channels.get(inputs[0])
        return name

    def conv(self, x: str, name: str, out_channels: int, kernel: int | tuple[int, int],
             stride: int = 1, pads: Pads = 0, group: int = 1, bias: bool = False,
             bn: str | None = None, relu: str | None = None,
             bn_gamma: tuple[float, float] = (0.5, 1.5)) -> str:
        """Conv, then BatchNormalization named `bn` and Relu named `relu` if given.

        pads: one number for all sides, (top, left, bottom, right), or an
        ONNX auto_pad value such as "SAME_UPPER"."""
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        cg = self.channels_of(x) // group
        weight = self.rng.normal(0.0, np.sqrt(2.0 / (cg * kh * kw)), (out_channels, cg, kh, kw))
        inputs = [x, self.constant(f"{name}.weight", weight)]
        if bias:
            inputs.append(self.constant(f"{name}.bias", self.rng.uniform(-0.1, 0.1, out_channels)))
        attrs = {"kernel_shape": [kh, kw], "strides": [stride, stride], "group": group}
        if isinstance(pads, str):
            attrs["auto_pad"] = pads
        else:
            attrs["pads"] = [pads] * 4 if isinstance(pads, int) else list(pads)
        y = self.node("Conv", inputs, name, channels=out_channels, **attrs)
        if bn:
            y = self.batchnorm(y, bn, bn_gamma)
        return self.node("Relu", [y], relu) if relu else y

    def conv_transpose(self, x: str, name: str, out_channels: int, kernel: int, stride: int,
                       pads: int = 0, output_padding: int = 0, group: int = 1,
                       bias: bool = False, bn: str | None = None,
                       relu: str | None = None) -> str:
        """ConvTranspose (a decoder's upsampling), then BatchNormalization and Relu
        as conv() does; the weight is (C, out_channels / group, k, k)."""
        c = self.channels_of(x)
        fan_in = c // group * kernel * kernel // (stride * stride) or 1
        weight = self.rng.normal(0.0, np.sqrt(2.0 / fan_in),
                                 (c, out_channels // group, kernel, kernel))
        inputs = [x, self.constant(f"{name}.weight", weight)]
        if bias:
            inputs.append(self.constant(f"{name}.bias", self.rng.uniform(-0.1, 0.1, out_channels)))
        y = self.node("ConvTranspose", inputs, name, channels=out_channels,
                      kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pads] * 4,
                      output_padding=[output_padding] * 2, group=group)
        if bn:
            y = self.batchnorm(y, bn)
        return self.node("Relu", [y], relu) if relu else y

    def batchnorm(self, x: str, name: str, gamma: tuple[float, float] = (0.5, 1.5),
                  epsilon: float = 1e-5) -> str:
        """Inference BatchNormalization with gamma drawn from the range `gamma`."""
        c = self.channels_of(x)
        params = [("weight", self.rng.uniform(*gamma, c)), ("bias", self.rng.uniform(-0.1, 0.1, c)),
                  ("running_mean", self.rng.uniform(-0.1, 0.1, c)),
                  ("running_var", self.rng.uniform(0.5, 1.5, c))]
        inputs = [x] + [self.constant(f"{name}.{p}", v) for p, v in params]
        return self.node("BatchNormalization", inputs, name, epsilon=epsilon)

    def add(self, a: str, b: str, name: str, relu: str | None = None) -> str:
        y = self.node("Add", [a, b], name)
        return self.node("Relu", [y], relu) if relu else y

    def maxpool(self, x: str, name: str, kernel: int, stride: int, pad: int,
                ceil_mode: bool = False) -> str:
        """ceil_mode rounds the output size up, as torch's MaxPool2d(ceil_mode=True);
        the attribute is written only when set, so floor-mode models keep their bytes."""
        attrs = {"ceil_mode": 1} if ceil_mode else {}
        return self.node("MaxPool", [x], name, kernel_shape=[kernel, kernel],
                         strides=[stride, stride], pads=[pad] * 4, **attrs)

    def global_avg_pool(self, x: str, name: str) -> str:
        return self.node("GlobalAveragePool", [x], name)

    def flatten(self, x: str, name: str, hw: tuple[int, int] = (1, 1)) -> str:
        """hw: the input's spatial size, which the builder does not track; the
        output has channels * h * w features (the next Gemm's fan-in)."""
        return self.node("Flatten", [x], name, channels=self.channels_of(x) * hw[0] * hw[1], axis=1)

    def concat(self, xs: Sequence[str], name: str) -> str:
        """Concatenation on the channel axis."""
        return self.node("Concat", xs, name, channels=sum(self.channels_of(x) for x in xs), axis=1)

    def relu6(self, x: str, name: str) -> str:
        """torch's ReLU6 as Clip(0, 6); since opset 11 the bounds are inputs, not attributes."""
        lo = self.constant(f"{name}.min", np.float32(0.0))
        hi = self.constant(f"{name}.max", np.float32(6.0))
        return self.node("Clip", [x, lo, hi], name)

    def dropout(self, x: str, name: str, ratio: float) -> str:
        """Dropout: an identity at inference (no training_mode input); `ratio`, an
        input since opset 12, records the rate the network was trained with."""
        return self.node("Dropout", [x, self.constant(f"{name}.ratio", np.float32(ratio))], name)

    def gemm(self, x: str, name: str, out_features: int) -> str:
        """A fully connected layer with torch's [out, in] weight (transB=1)."""
        fan_in = self.channels_of(x)
        w = self.constant(f"{name}.weight",
                          self.rng.normal(0.0, np.sqrt(1.0 / fan_in), (out_features, fan_in)))
        b = self.constant(f"{name}.bias", self.rng.uniform(-0.1, 0.1, out_features))
        return self.node("Gemm", [x, w, b], name, channels=out_features, transB=1)

    def model(self, output: str, graph_name: str, output_name: str = "output") -> onnx.ModelProto:
        """The model whose output is tensor `output`, renamed `output_name`."""
        for node in self.nodes:
            node.output[:] = [output_name if t == output else t for t in node.output]
        inputs = [helper.make_tensor_value_info(self.input, TensorProto.FLOAT, self._input_shape)]
        if self.ir_version < 4:
            # IR < 4 requires every initializer to be listed as a graph input too.
            inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                       for t in self.initializers]
        graph = helper.make_graph(
            self.nodes, graph_name, inputs,
            [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, None)],
            self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  ir_version=self.ir_version, producer_name="acltuner.zoo")
        # The checker wants the output's shape: take it from shape inference, but
        # keep the intermediate shapes out of the model, as exporters usually do.
        # Inference runs on a copy whose big weights are only declared (their
        # shapes are all it needs), so it does not serialise hundreds of MB; small
        # constants (shapes, Clip bounds) stay, as inference may read their values.
        small = [t for t in self.initializers if int(np.prod(t.dims)) <= 64]
        declared = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                    for t in self.initializers if int(np.prod(t.dims)) > 64]
        light = helper.make_graph(self.nodes, graph_name,
                                  inputs + (declared if self.ir_version >= 4 else []),
                                  list(graph.output), small)
        inferred = onnx.shape_inference.infer_shapes(
            helper.make_model(light, opset_imports=model.opset_import,
                              ir_version=self.ir_version), strict_mode=True)
        model.graph.output[0].CopyFrom(inferred.graph.output[0])
        return model

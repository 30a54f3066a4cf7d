"""The types shared by the engine, the launcher client and the tuner.

A ConvShape is one convolution (ONNX Conv semantics, or ConvTranspose's when
`transposed`; NHWC activations); an
ExecConfig is how to run it: algorithm, GEMM micro-kernel, a weight per core and
the number of workloads the output is cut into.  Both round-trip through plain
dicts with the same field names as the C structs, which is what the launcher
protocol and the records files carry.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

# The engine's ACL_ACTIVATIONS, in order.
ACTIVATIONS = ("none", "relu", "clip", "leaky_relu", "sigmoid", "hard_sigmoid", "hard_swish",
               "silu", "mish", "gelu", "gelu_tanh")
# The arithmetic a plan's micro-kernels may use (tuner/precision.py: fp16
# adds the Armv8.2-A half-precision ones); plans record it.
PRECISIONS = ("fp32", "fp16")
_TRANSPOSED_FIELDS = ("transposed", "out_pad_h", "out_pad_w")


@dataclass(frozen=True)
class ConvShape:
    n: int
    h: int
    w: int
    c: int
    oc: int
    kh: int
    kw: int
    stride_h: int = 1
    stride_w: int = 1
    dil_h: int = 1
    dil_w: int = 1
    pad_top: int = 0
    pad_left: int = 0
    pad_bottom: int = 0
    pad_right: int = 0
    group: int = 1
    act: str = "none"
    act_min: float = 0.0
    act_max: float = 0.0
    act_alpha: float = 0.0
    act_beta: float = 0.0
    has_residual: bool = False
    transposed: bool = False
    out_pad_h: int = 0
    out_pad_w: int = 0

    def __post_init__(self) -> None:
        if self.act not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {list(ACTIVATIONS)}, got {self.act!r}")
        for name in ("n", "h", "w", "c", "oc", "kh", "kw", "stride_h", "stride_w", "dil_h",
                     "dil_w", "group"):
            if getattr(self, name) < 1:
                raise ValueError(f"ConvShape.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("pad_top", "pad_left", "pad_bottom", "pad_right", "out_pad_h", "out_pad_w"):
            if getattr(self, name) < 0:
                raise ValueError(f"ConvShape.{name} must be >= 0, got {getattr(self, name)}")
        if not self.transposed and (self.out_pad_h or self.out_pad_w):
            raise ValueError(f"ConvShape.out_pad_h/out_pad_w ({self.out_pad_h}, "
                             f"{self.out_pad_w}) apply to transposed convolutions only")
        if self.c % self.group or self.oc % self.group:
            raise ValueError(f"group {self.group} must divide input channels {self.c} "
                             f"and output channels {self.oc}")

    @property
    def out_hw(self) -> tuple[int, int]:
        eff_h = self.dil_h * (self.kh - 1) + 1
        eff_w = self.dil_w * (self.kw - 1) + 1
        if self.transposed:
            return (self.stride_h * (self.h - 1) + self.out_pad_h + eff_h - self.pad_top
                    - self.pad_bottom,
                    self.stride_w * (self.w - 1) + self.out_pad_w + eff_w - self.pad_left
                    - self.pad_right)
        oh = (self.h + self.pad_top + self.pad_bottom - eff_h) // self.stride_h + 1
        ow = (self.w + self.pad_left + self.pad_right - eff_w) // self.stride_w + 1
        return oh, ow

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.h, self.w, self.c)

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        oh, ow = self.out_hw
        return (self.n, oh, ow, self.oc)

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        """OIHW, or ConvTranspose's (c, oc / group, kh, kw) when transposed."""
        if self.transposed:
            return (self.c, self.oc // self.group, self.kh, self.kw)
        return (self.oc, self.c // self.group, self.kh, self.kw)

    @property
    def flops(self) -> int:
        # A transposed convolution multiplies every input pixel by every tap.
        oh, ow = (self.h, self.w) if self.transposed else self.out_hw
        return 2 * self.n * oh * ow * self.oc * (self.c // self.group) * self.kh * self.kw

    def to_dict(self) -> dict:
        """The fields; an ordinary convolution's leaves out the transposed ones,
        so its records and launcher requests read as before they existed."""
        d = asdict(self)
        if not self.transposed:
            for name in _TRANSPOSED_FIELDS:
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "ConvShape":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown conv shape field(s): {', '.join(sorted(unknown))}")
        return cls(**d)


@dataclass(frozen=True)
class ExecConfig:
    algorithm: str
    ukernel: str | None
    core_weights: tuple[int, ...]
    workloads: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "core_weights", tuple(int(w) for w in self.core_weights))
        if self.workloads < 1:
            raise ValueError(f"workloads must be >= 1, got {self.workloads}")
        if any(w < 0 for w in self.core_weights) or not any(self.core_weights):
            raise ValueError(f"core weights need at least one positive and none negative: "
                             f"{self.weights_str}")

    @property
    def weights_str(self) -> str:
        """Table 1's notation, e.g. 1:1:1:1:3:3."""
        return ":".join(str(w) for w in self.core_weights)

    @property
    def threads(self) -> int:
        return sum(1 for w in self.core_weights if w)

    def __str__(self) -> str:
        return f"{self.algorithm}/{self.ukernel or '-'}/{self.weights_str}/w{self.workloads}"

    def to_dict(self) -> dict:
        return {"algorithm": self.algorithm, "ukernel": self.ukernel,
                "core_weights": list(self.core_weights), "workloads": self.workloads}

    @classmethod
    def from_dict(cls, d: dict) -> "ExecConfig":
        return cls(algorithm=d["algorithm"], ukernel=d.get("ukernel"),
                   core_weights=tuple(d["core_weights"]), workloads=int(d["workloads"]))

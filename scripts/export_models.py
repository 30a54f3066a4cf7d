#!/usr/bin/env python3
"""Exports the real models of configs/real_models.yaml whose source is `torch`:
common CNN architectures that no PyPI package ships as ONNX, written here in
plain PyTorch, given seeded random weights and exported with torch.onnx
(the TorchScript exporter, opset 17, batch 1, static shapes).

The export runs in a virtualenv of its own holding the pinned torch and onnx
(REQUIREMENTS; created on first use under ~/.cache/acltuner/, or at
$ACLTUNER_EXPORT_VENV), never in the project's.  Weights come from numpy's
PCG64 generator seeded per model (not from torch's samplers, whose vectorised
paths may differ between CPUs), the exporter runs on one thread, and so the
bytes written are the same on every run: scripts/fetch_models.py checks them
against the manifest's sha256 before writing them atomically.

    .venv/bin/python scripts/fetch_models.py mobilenetv3_large   # the usual way
    .venv/bin/python scripts/export_models.py --list              # the architectures
    .venv/bin/python scripts/export_models.py convnext_atto --out /tmp/c.onnx \\
        --shape 1,3,224,224 --seed 0                               # one, by hand
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What the export venv holds; its folder is named after their hash, so a change
# here makes a fresh one.  torch's other dependencies do not touch the bytes.
REQUIREMENTS = ["torch==2.13.0", "onnx==1.23.2", "numpy==2.4.6", "protobuf==7.36.2",
                "ml_dtypes==0.6.0"]
OPSET = 17


def venv_dir() -> Path:
    env = os.environ.get("ACLTUNER_EXPORT_VENV")
    if env:
        return Path(env)
    tag = hashlib.sha256(" ".join(REQUIREMENTS).encode()).hexdigest()[:12]
    return Path.home() / ".cache" / "acltuner" / f"export-venv-{tag}"


def ensure_venv() -> Path:
    """The export venv's python, creating the venv first if needed;
    RuntimeError in one line if that fails."""
    venv = venv_dir()
    python = venv / "bin" / "python"
    marker = venv / ".acltuner-requirements"
    if python.is_file() and marker.is_file() and marker.read_text() == "\n".join(REQUIREMENTS):
        return python
    print(f"export: installing {' '.join(REQUIREMENTS)} into {venv}", flush=True)
    for cmd in ([sys.executable, "-m", "venv", "--clear", str(venv)],
                [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                 *REQUIREMENTS]):
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            lines = [ln for ln in out.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
            raise RuntimeError(f"{' '.join(cmd[1:4])} failed: "
                               f"{lines[-1].strip() if lines else f'exit {out.returncode}'}")
    marker.write_text("\n".join(REQUIREMENTS))
    return python


def export_all(jobs: list[dict], timeout: float = 1800) -> dict[str, bytes]:
    """Exports each job ({name, arch, seed, shapes}) in the export venv, in one
    process; the bytes of each model by name.  RuntimeError in one line if the
    venv or the export fails."""
    try:
        python = ensure_venv()
    except OSError as e:
        raise RuntimeError(f"the export venv could not be set up: {e}") from None
    with tempfile.TemporaryDirectory(prefix="acltuner-export-") as tmp:
        spec = [{**j, "out": str(Path(tmp) / f"{j['name']}.onnx")} for j in jobs]
        out = subprocess.run([str(python), __file__, "--worker"], input=json.dumps(spec),
                             capture_output=True, text=True, timeout=timeout)
        if out.returncode != 0:
            lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
            raise RuntimeError(f"export failed: {lines[-1] if lines else f'exit {out.returncode}'}")
        return {j["name"]: Path(j["out"]).read_bytes() for j in spec}


# ---------------------------------------------------------------------------
# Everything below runs inside the export venv (torch imported lazily).

def _architectures():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    ACT = {"relu": nn.ReLU, "hswish": nn.Hardswish, "silu": nn.SiLU, "gelu": nn.GELU,
           "relu6": nn.ReLU6}

    def div8(v: float, d: int = 8) -> int:
        n = max(d, int(v + d / 2) // d * d)
        return n + d if n < 0.9 * v else n

    class ConvBN(nn.Sequential):
        def __init__(self, cin, cout, k=3, s=1, g=1, d=1, act="relu"):
            layers = [nn.Conv2d(cin, cout, k, s, (k - 1) // 2 * d, dilation=d, groups=g,
                                bias=False), nn.BatchNorm2d(cout)]
            if act:
                layers.append(ACT[act]())
            super().__init__(*layers)

    class SqueezeExcite(nn.Module):
        """Channel gate: mean over space, two 1x1 convolutions, a sigmoid."""

        def __init__(self, c, mid, gate="hsigmoid", act="relu"):
            super().__init__()
            self.reduce = nn.Conv2d(c, mid, 1)
            self.act = ACT[act]()
            self.expand = nn.Conv2d(mid, c, 1)
            self.gate = nn.Hardsigmoid() if gate == "hsigmoid" else nn.Sigmoid()

        def forward(self, x):
            s = F.adaptive_avg_pool2d(x, 1)
            return x * self.gate(self.expand(self.act(self.reduce(s))))

    class Classifier(nn.Module):
        def __init__(self, cin, hidden, classes=1000, act="hswish", norm=None):
            super().__init__()
            self.norm = norm
            self.fc1 = nn.Linear(cin, hidden) if hidden else None
            self.act = ACT[act]() if hidden else None
            self.fc2 = nn.Linear(hidden or cin, classes)

        def forward(self, x):
            x = F.adaptive_avg_pool2d(x, 1).flatten(1)
            if self.norm is not None:
                x = self.norm(x)
            if self.fc1 is not None:
                x = self.act(self.fc1(x))
            return self.fc2(x)

    # -- MobileNetV3 (large), also the backbone of the two segmentation nets --
    MNV3_LARGE = [  # kernel, expansion, out, SE, activation, stride
        (3, 16, 16, False, "relu", 1), (3, 64, 24, False, "relu", 2),
        (3, 72, 24, False, "relu", 1), (5, 72, 40, True, "relu", 2),
        (5, 120, 40, True, "relu", 1), (5, 120, 40, True, "relu", 1),
        (3, 240, 80, False, "hswish", 2), (3, 200, 80, False, "hswish", 1),
        (3, 184, 80, False, "hswish", 1), (3, 184, 80, False, "hswish", 1),
        (3, 480, 112, True, "hswish", 1), (3, 672, 112, True, "hswish", 1),
        (5, 672, 160, True, "hswish", 2), (5, 960, 160, True, "hswish", 1),
        (5, 960, 160, True, "hswish", 1)]

    class InvertedResidual(nn.Module):
        def __init__(self, cin, k, exp, cout, se, act, s, d=1):
            super().__init__()
            layers = [] if exp == cin else [ConvBN(cin, exp, 1, act=act)]
            layers.append(ConvBN(exp, exp, k, s, g=exp, d=d, act=act))
            if se:
                layers.append(SqueezeExcite(exp, div8(exp / 4)))
            layers.append(ConvBN(exp, cout, 1, act=None))
            self.body = nn.Sequential(*layers)
            self.residual = s == 1 and cin == cout

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    class MobileNetV3Features(nn.Module):
        """The blocks up to the last 960-channel convolution; `dilated`: the
        last stride-2 stage keeps stride 16 with dilation 2 (for segmentation);
        returns the stride-8 features too."""

        def __init__(self, dilated=False):
            super().__init__()
            self.stem = ConvBN(3, 16, 3, 2, act="hswish")
            blocks, cin, d = [], 16, 1
            for k, exp, cout, se, act, s in MNV3_LARGE:
                if dilated and s == 2 and cout == 160:
                    s, d = 1, 2
                blocks.append(InvertedResidual(cin, k, exp, cout, se, act, s, d))
                cin = cout
            self.low = nn.Sequential(*blocks[:6])  # stride 8, 40 channels
            self.high = nn.Sequential(*blocks[6:])
            self.last = ConvBN(160, 960, 1, act="hswish")

        def forward(self, x):
            low = self.low(self.stem(x))
            return low, self.last(self.high(low))

    class MobileNetV3Large(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = MobileNetV3Features()
            self.head = Classifier(960, 1280)

        def forward(self, x):
            return self.head(self.features(x)[1])

    class LRASPP(nn.Module):
        """Lite R-ASPP segmentation head on a dilated MobileNetV3-large."""

        def __init__(self, classes=21):
            super().__init__()
            self.features = MobileNetV3Features(dilated=True)
            self.cbr = ConvBN(960, 128, 1)
            self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(960, 128, 1),
                                       nn.Sigmoid())
            self.low_cls = nn.Conv2d(40, classes, 1)
            self.high_cls = nn.Conv2d(128, classes, 1)

        def forward(self, x):
            low, high = self.features(x)
            y = self.cbr(high) * self.scale(high)
            y = F.interpolate(y, size=low.shape[-2:], mode="bilinear", align_corners=False)
            y = self.low_cls(low) + self.high_cls(y)
            return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)

    class DeepLabV3(nn.Module):
        """DeepLabV3 with ASPP (1x1, 3x3 at rates 12/24/36, image pooling) on a
        dilated MobileNetV3-large (output stride 16)."""

        def __init__(self, classes=21, width=128, rates=(12, 24, 36)):
            super().__init__()
            self.features = MobileNetV3Features(dilated=True)
            self.branches = nn.ModuleList(
                [ConvBN(960, width, 1)] + [ConvBN(960, width, 3, d=r) for r in rates])
            self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), ConvBN(960, width, 1))
            self.project = ConvBN(width * (len(rates) + 2), width, 1)
            self.head = nn.Sequential(ConvBN(width, width, 3), nn.Conv2d(width, classes, 1))

        def forward(self, x):
            high = self.features(x)[1]
            ys = [b(high) for b in self.branches]
            ys.append(F.interpolate(self.pool(high), size=high.shape[-2:], mode="bilinear",
                                    align_corners=False))
            y = self.head(self.project(torch.cat(ys, 1)))
            return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)

    # -- GhostNet 1.0 --
    class Ghost(nn.Module):
        """Half the output channels from a 1x1 convolution, the other half from
        a cheap depthwise 3x3 of those; concatenated and cut to `cout`."""

        def __init__(self, cin, cout, relu=True):
            super().__init__()
            self.cout = cout
            init = (cout + 1) // 2
            act = "relu" if relu else None
            self.primary = ConvBN(cin, init, 1, act=act)
            self.cheap = ConvBN(init, init, 3, g=init, act=act)

        def forward(self, x):
            y = self.primary(x)
            return torch.cat([y, self.cheap(y)], 1)[:, :self.cout]

    class GhostBottleneck(nn.Module):
        def __init__(self, cin, k, mid, cout, se, s):
            super().__init__()
            layers = [Ghost(cin, mid)]
            if s > 1:
                layers.append(ConvBN(mid, mid, k, s, g=mid, act=None))
            if se:
                layers.append(SqueezeExcite(mid, div8(mid * se, 4)))
            layers.append(Ghost(mid, cout, relu=False))
            self.body = nn.Sequential(*layers)
            if s == 1 and cin == cout:
                self.short = nn.Identity()
            else:
                self.short = nn.Sequential(ConvBN(cin, cin, k, s, g=cin, act=None),
                                           ConvBN(cin, cout, 1, act=None))

        def forward(self, x):
            return self.body(x) + self.short(x)

    class GhostNet(nn.Module):
        CFG = [(3, 16, 16, 0, 1), (3, 48, 24, 0, 2), (3, 72, 24, 0, 1),
               (5, 72, 40, 0.25, 2), (5, 120, 40, 0.25, 1), (3, 240, 80, 0, 2),
               (3, 200, 80, 0, 1), (3, 184, 80, 0, 1), (3, 184, 80, 0, 1),
               (3, 480, 112, 0.25, 1), (3, 672, 112, 0.25, 1), (5, 672, 160, 0.25, 2),
               (5, 960, 160, 0, 1), (5, 960, 160, 0.25, 1), (5, 960, 160, 0, 1),
               (5, 960, 160, 0.25, 1)]

        def __init__(self):
            super().__init__()
            blocks, cin = [ConvBN(3, 16, 3, 2)], 16
            for k, mid, cout, se, s in self.CFG:
                blocks.append(GhostBottleneck(cin, k, mid, cout, se, s))
                cin = cout
            blocks.append(ConvBN(160, 960, 1))
            self.features = nn.Sequential(*blocks)
            self.head = Classifier(960, 1280, act="relu")

        def forward(self, x):
            return self.head(self.features(x))

    # -- MobileNetV4-conv-small: universal inverted bottlenecks --
    class UIB(nn.Module):
        """Optional depthwise before the 1x1 expansion, optional depthwise
        after it, a 1x1 projection; the stride on the first depthwise."""

        def __init__(self, cin, cout, start_k, mid_k, exp, s):
            super().__init__()
            hidden = div8(cin * exp)
            layers = []
            if start_k:
                layers.append(ConvBN(cin, cin, start_k, s, g=cin, act=None))
            layers.append(ConvBN(cin, hidden, 1))
            if mid_k:
                layers.append(ConvBN(hidden, hidden, mid_k, 1 if start_k else s, g=hidden))
            layers.append(ConvBN(hidden, cout, 1, act=None))
            self.body = nn.Sequential(*layers)
            self.residual = s == 1 and cin == cout

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    class MobileNetV4Small(nn.Module):
        UIBS = [  # out, start dw kernel, middle dw kernel, expansion, stride
            (96, 5, 5, 3.0, 2), (96, 0, 3, 2.0, 1), (96, 0, 3, 2.0, 1), (96, 0, 3, 2.0, 1),
            (96, 0, 3, 2.0, 1), (96, 3, 0, 4.0, 1),
            (128, 3, 3, 6.0, 2), (128, 5, 5, 4.0, 1), (128, 0, 5, 4.0, 1), (128, 0, 5, 3.0, 1),
            (128, 0, 3, 4.0, 1), (128, 0, 3, 4.0, 1)]

        def __init__(self):
            super().__init__()
            layers = [ConvBN(3, 32, 3, 2), ConvBN(32, 32, 3, 2), ConvBN(32, 32, 1),
                      ConvBN(32, 96, 3, 2), ConvBN(96, 64, 1)]
            cin = 64
            for cout, a, b, e, s in self.UIBS:
                layers.append(UIB(cin, cout, a, b, e, s))
                cin = cout
            layers.append(ConvBN(128, 960, 1))
            self.features = nn.Sequential(*layers)
            self.head = Classifier(960, 1280, act="relu")

        def forward(self, x):
            return self.head(self.features(x))

    # -- ResNeXt-50 32x4d and RegNetY-400MF: grouped 3x3 convolutions --
    class GroupedBottleneck(nn.Module):
        def __init__(self, cin, width, cout, groups, s, se_mid=0):
            super().__init__()
            layers = [ConvBN(cin, width, 1), ConvBN(width, width, 3, s, g=groups)]
            if se_mid:
                layers.append(SqueezeExcite(width, se_mid, gate="sigmoid"))
            layers.append(ConvBN(width, cout, 1, act=None))
            self.body = nn.Sequential(*layers)
            self.short = (nn.Identity() if s == 1 and cin == cout
                          else ConvBN(cin, cout, 1, s, act=None))
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.body(x) + self.short(x))

    class ResNeXt50(nn.Module):
        def __init__(self, groups=32, base_width=4):
            super().__init__()
            layers = [ConvBN(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
            cin = 64
            for i, (planes, n) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
                width = planes * base_width // 64 * groups
                for j in range(n):
                    layers.append(GroupedBottleneck(cin, width, planes * 4, groups,
                                                    2 if j == 0 and i > 0 else 1))
                    cin = planes * 4
            self.features = nn.Sequential(*layers)
            self.head = Classifier(2048, 0)

        def forward(self, x):
            return self.head(self.features(x))

    class RegNetY400MF(nn.Module):
        def __init__(self, widths=(48, 104, 208, 440), depths=(1, 3, 6, 6), group_width=8):
            super().__init__()
            layers, cin = [ConvBN(3, 32, 3, 2)], 32
            for w, n in zip(widths, depths):
                for j in range(n):
                    layers.append(GroupedBottleneck(cin, w, w, w // group_width,
                                                    2 if j == 0 else 1, se_mid=int(cin * 0.25)))
                    cin = w
            self.features = nn.Sequential(*layers)
            self.head = Classifier(440, 0)

        def forward(self, x):
            return self.head(self.features(x))

    # -- ConvNeXt (atto widths): depthwise 7x7, channels-last LayerNorm and MLP --
    class LayerNorm2d(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class ConvNeXtBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
            self.norm = nn.LayerNorm(c, eps=1e-6)
            self.fc1 = nn.Linear(c, 4 * c)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(4 * c, c)
            self.gamma = nn.Parameter(torch.ones(c))

        def forward(self, x):
            y = self.dw(x).permute(0, 2, 3, 1)
            y = self.fc2(self.act(self.fc1(self.norm(y)))) * self.gamma
            return x + y.permute(0, 3, 1, 2)

    class ConvNeXt(nn.Module):
        def __init__(self, dims=(40, 80, 160, 320), depths=(2, 2, 6, 2)):
            super().__init__()
            layers = [nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6)]
            for i, (c, n) in enumerate(zip(dims, depths)):
                if i:
                    layers += [LayerNorm2d(dims[i - 1], eps=1e-6),
                               nn.Conv2d(dims[i - 1], c, 2, 2)]
                layers += [ConvNeXtBlock(c) for _ in range(n)]
            self.features = nn.Sequential(*layers)
            self.head = Classifier(dims[-1], 0, norm=nn.LayerNorm(dims[-1], eps=1e-6))

        def forward(self, x):
            return self.head(self.features(x))

    # -- MobileViT-XXS: inverted residuals, then transformers over 2x2 patches --
    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads, self.scale = heads, (d // heads) ** -0.5
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)

        def forward(self, x):  # [B, N, d]
            b, n, d = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads) \
                .permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) * self.scale, -1)
            return self.out((a @ v).transpose(1, 2).reshape(b, n, d))

    class TransformerLayer(nn.Module):
        def __init__(self, d, heads, mlp):
            super().__init__()
            self.norm1 = nn.LayerNorm(d)
            self.attn = Attention(d, heads)
            self.norm2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, mlp), nn.SiLU(), nn.Linear(mlp, d))

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class MobileViTBlock(nn.Module):
        def __init__(self, c, d, layers, heads=4, patch=2):
            super().__init__()
            self.patch = patch
            self.local = nn.Sequential(ConvBN(c, c, 3, act="silu"), nn.Conv2d(c, d, 1,
                                                                              bias=False))
            self.transformer = nn.Sequential(*[TransformerLayer(d, heads, 2 * d)
                                               for _ in range(layers)], nn.LayerNorm(d))
            self.proj = ConvBN(d, c, 1, act="silu")
            self.fuse = ConvBN(2 * c, c, 3, act="silu")

        def forward(self, x):
            y = self.local(x)
            b, d, h, w = y.shape
            p = self.patch
            # [B, d, H, W] -> [B * p * p, H/p * W/p, d]: one sequence per patch position
            t = y.reshape(b, d, h // p, p, w // p, p).permute(0, 3, 5, 2, 4, 1) \
                .reshape(b * p * p, (h // p) * (w // p), d)
            t = self.transformer(t)
            y = t.reshape(b, p, p, h // p, w // p, d).permute(0, 5, 3, 1, 4, 2) \
                .reshape(b, d, h, w)
            return self.fuse(torch.cat([x, self.proj(y)], 1))

    class MobileViTXXS(nn.Module):
        def __init__(self):
            super().__init__()

            def mv2(cin, cout, s):
                return InvertedResidual(cin, 3, 2 * cin, cout, False, "silu", s)

            self.features = nn.Sequential(
                ConvBN(3, 16, 3, 2, act="silu"), mv2(16, 16, 1), mv2(16, 24, 2),
                mv2(24, 24, 1), mv2(24, 24, 1), mv2(24, 48, 2), MobileViTBlock(48, 64, 2),
                mv2(48, 64, 2), MobileViTBlock(64, 80, 4), mv2(64, 80, 2),
                MobileViTBlock(80, 96, 3), ConvBN(80, 320, 1, act="silu"))
            self.head = Classifier(320, 0)

        def forward(self, x):
            return self.head(self.features(x))

    # -- EfficientFormer-L1: pooling mixers on 4-D maps, then attention on tokens --
    class Meta4D(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
            self.mlp = nn.Sequential(ConvBN(c, 4 * c, 1, act="gelu"),
                                     ConvBN(4 * c, c, 1, act=None))
            self.gamma1 = nn.Parameter(torch.ones(c, 1, 1))
            self.gamma2 = nn.Parameter(torch.ones(c, 1, 1))

        def forward(self, x):
            x = x + self.gamma1 * (self.pool(x) - x)
            return x + self.gamma2 * self.mlp(x)

    class BiasedAttention(nn.Module):
        """Multi-head attention whose queries and keys are narrower than its
        values, plus a learned bias per head and pair of positions."""

        def __init__(self, d, tokens, heads=8, key_dim=32, ratio=4):
            super().__init__()
            self.heads, self.key_dim, self.value_dim = heads, key_dim, ratio * key_dim
            self.scale = key_dim ** -0.5
            self.qkv = nn.Linear(d, heads * (2 * key_dim + ratio * key_dim))
            self.attention_bias = nn.Parameter(torch.zeros(heads, tokens, tokens))
            self.proj = nn.Linear(heads * ratio * key_dim, d)

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = self.qkv(x).reshape(b, n, self.heads, -1).permute(0, 2, 1, 3) \
                .split([self.key_dim, self.key_dim, self.value_dim], 3)
            a = torch.softmax(q @ k.transpose(-1, -2) * self.scale + self.attention_bias, -1)
            return self.proj((a @ v).transpose(1, 2).reshape(b, n, -1))

    class Meta3D(nn.Module):
        def __init__(self, d, tokens):
            super().__init__()
            self.norm1 = nn.LayerNorm(d)
            self.attn = BiasedAttention(d, tokens)
            self.norm2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.gamma1 = nn.Parameter(torch.ones(d))
            self.gamma2 = nn.Parameter(torch.ones(d))

        def forward(self, x):
            x = x + self.gamma1 * self.attn(self.norm1(x))
            return x + self.gamma2 * self.mlp(self.norm2(x))

    class EfficientFormerL1(nn.Module):
        def __init__(self, dims=(48, 96, 224, 448), depths=(3, 2, 6, 4), tokens=49):
            super().__init__()
            layers = [ConvBN(3, dims[0] // 2, 3, 2), ConvBN(dims[0] // 2, dims[0], 3, 2)]
            for i, (c, n) in enumerate(zip(dims, depths)):
                if i:
                    layers.append(ConvBN(dims[i - 1], c, 3, 2, act=None))
                layers += [Meta4D(c) for _ in range(n - (1 if i == 3 else 0))]
            self.features = nn.Sequential(*layers)
            self.last = Meta3D(dims[-1], tokens)
            self.norm = nn.LayerNorm(dims[-1])
            self.fc = nn.Linear(dims[-1], 1000)

        def forward(self, x):
            x = self.features(x).flatten(2).transpose(1, 2)  # [B, 49, 448]
            return self.fc(self.norm(self.last(x)).mean(1))

    # -- CRNN: a VGG-style backbone, a bidirectional LSTM unrolled over time --
    class UnrolledLSTM(nn.Module):
        """One direction of an LSTM written out step by step: one Gemm of
        [x_t, h] per step for the four gates, as an exporter that unrolls the
        recurrence leaves it."""

        def __init__(self, cin, hidden, reverse):
            super().__init__()
            self.hidden, self.reverse = hidden, reverse
            self.gates = nn.Linear(cin + hidden, 4 * hidden)

        def forward(self, xs):  # list of [B, cin]
            h = xs[0].new_zeros(xs[0].shape[0], self.hidden)
            c = h
            out = [None] * len(xs)
            order = range(len(xs) - 1, -1, -1) if self.reverse else range(len(xs))
            n = self.hidden
            for t in order:
                z = self.gates(torch.cat([xs[t], h], 1))
                i, f, g, o = z[:, :n], z[:, n:2 * n], z[:, 2 * n:3 * n], z[:, 3 * n:]
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                out[t] = h
            return out

    class CRNN(nn.Module):
        def __init__(self, classes=37, hidden=128):
            super().__init__()
            self.cnn = nn.Sequential(
                ConvBN(1, 64), nn.MaxPool2d(2, 2), ConvBN(64, 128), nn.MaxPool2d(2, 2),
                ConvBN(128, 256), ConvBN(256, 256), nn.MaxPool2d((2, 1), (2, 1)),
                ConvBN(256, 256), ConvBN(256, 256), nn.MaxPool2d((2, 1), (2, 1)),
                ConvBN(256, 256, 2, act="relu"))
            self.fw = UnrolledLSTM(256, hidden, False)
            self.bw = UnrolledLSTM(256, hidden, True)
            self.cls = nn.Linear(2 * hidden, classes)

        def forward(self, x):
            f = self.cnn(x)  # [B, 256, 1, T]
            f = f[:, :, 0]  # [B, 256, T]
            xs = [f[:, :, t] for t in range(f.shape[2])]
            seq = torch.stack([torch.cat([a, b], 1) for a, b in
                               zip(self.fw(xs), self.bw(xs))], 1)  # [B, T, 2h]
            return self.cls(seq).log_softmax(-1)

    # -- KWS CRNN: convolutions over log-mel features, a bidirectional GRU --
    class KwsCRNN(nn.Module):
        """A keyword spotter in the manner of Arik et al. (2017): 3x3
        convolutions over a 40-band log-mel spectrogram of 1 s (101 frames),
        then a 2-layer bidirectional GRU over the frames (nn.GRU: the exporter
        writes ONNX GRU nodes), averaged over time, then 12 classes."""

        def __init__(self, classes=12, hidden=64):
            super().__init__()
            self.cnn = nn.Sequential(ConvBN(1, 32), ConvBN(32, 64, s=2), ConvBN(64, 64),
                                     ConvBN(64, 128, s=2), ConvBN(128, 128))
            self.gru = nn.GRU(128 * 10, hidden, num_layers=2, bidirectional=True)
            self.cls = nn.Linear(2 * hidden, classes)

        def forward(self, x):
            f = self.cnn(x)  # [B, 128, 10, T]
            seq = f.flatten(1, 2).permute(2, 0, 1)  # [T, B, 1280]
            out, _ = self.gru(seq)
            return self.cls(out.mean(0))

    return {
        "mobilenetv3_large": MobileNetV3Large,
        "lraspp_mobilenetv3": LRASPP,
        "deeplabv3_mobilenetv3": DeepLabV3,
        "ghostnet": GhostNet,
        "mobilenetv4_small": MobileNetV4Small,
        "resnext50_32x4d": ResNeXt50,
        "regnety_400mf": RegNetY400MF,
        "convnext_atto": ConvNeXt,
        "mobilevit_xxs": MobileViTXXS,
        "efficientformer_l1": EfficientFormerL1,
        "crnn_unrolled_bilstm": CRNN,
        "kws_crnn_gru": KwsCRNN,
    }


ARCHITECTURES = ["mobilenetv3_large", "lraspp_mobilenetv3", "deeplabv3_mobilenetv3", "ghostnet",
                 "mobilenetv4_small", "resnext50_32x4d", "regnety_400mf", "convnext_atto",
                 "mobilevit_xxs", "efficientformer_l1", "crnn_unrolled_bilstm",
                 "kws_crnn_gru"]


def _seed_weights(model, seed: int) -> None:
    """Every parameter and buffer from numpy's PCG64 (bit-exact on every CPU),
    scaled so that activations keep their size through the network: convolution
    and linear weights He-normal over their fan-in, normalisation scales near
    1, shifts and running means near 0, running variances near 1."""
    import numpy as np
    import torch

    rng = np.random.Generator(np.random.PCG64(seed))
    with torch.no_grad():
        for name, t in model.state_dict(keep_vars=True).items():
            if not t.dtype.is_floating_point:
                continue
            leaf = name.rsplit(".", 1)[-1]
            shape = tuple(t.shape)
            if leaf == "weight" and len(shape) >= 2:
                fan_in = int(np.prod(shape[1:]))
                v = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
            elif leaf in ("weight", "gamma", "gamma1", "gamma2", "running_var"):
                v = rng.uniform(0.7, 1.3, shape)
            elif leaf in ("bias", "running_mean", "attention_bias"):
                v = rng.standard_normal(shape) * 0.05
            elif leaf.startswith("weight_"):  # a GRU's input and hidden weights
                v = rng.standard_normal(shape) / np.sqrt(shape[1])
            elif leaf.startswith("bias_"):
                v = rng.standard_normal(shape) * 0.05
            else:
                raise ValueError(f"no seeding rule for {name}")
            t.copy_(torch.from_numpy(v.astype(np.float32)))


def _worker(spec: list[dict]) -> None:
    import io
    import warnings

    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    warnings.filterwarnings("ignore")
    archs = _architectures()
    for job in spec:
        model = archs[job["arch"]]()
        _seed_weights(model, job["seed"])
        model.eval()
        (name, shape), = job["shapes"].items()
        buf = io.BytesIO()
        with torch.no_grad():
            torch.onnx.export(model, (torch.zeros(shape),), buf, dynamo=False,
                              opset_version=OPSET, input_names=[name], output_names=["output"],
                              do_constant_folding=True)
        import onnx
        m = onnx.load_from_string(buf.getvalue())
        onnx.checker.check_model(m)
        Path(job["out"]).write_bytes(m.SerializeToString())


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:] == ["--worker"]:
        _worker(json.load(sys.stdin))
        return 0
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("arch", nargs="?", choices=ARCHITECTURES)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--shape", default="1,3,224,224", help="the input's shape")
    parser.add_argument("--input-name", default="input")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--list", action="store_true", help="list the architectures")
    args = parser.parse_args(argv)
    if args.list or not args.arch:
        print("\n".join(ARCHITECTURES))
        return 0
    out = args.out or Path(f"{args.arch}.onnx")
    shape = [int(d) for d in args.shape.split(",")]
    data = export_all([{"name": args.arch, "arch": args.arch, "seed": args.seed,
                        "shapes": {args.input_name: shape}}])[args.arch]
    from acltuner.atomic import write_atomic  # noqa: E402 (the project's venv)
    write_atomic(out, data)
    print(f"{out}: {len(data) / 1e6:.1f} MB, sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

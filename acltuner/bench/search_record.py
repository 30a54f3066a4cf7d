"""`acltuner bench search --record DIR`: measures the replay tables.

Tasks of different kinds (3x3, strided, 1x1, depthwise, first layer, FC) on a
reduced space -- this machine's first two CPUs as two one-core clusters,
weights 1-2, three workload counts, the best ISA family's kernels -- every
config measured once through the launcher.
"""
from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

import click

from acltuner.bench.layers import LAYERS
from acltuner.bench.search_tables import Tables, TaskTable, save_tables
from acltuner.engine import native
from acltuner.engine.config import ConvShape, ExecConfig
from acltuner.engine.launcher import LauncherClient
from acltuner.measure.launcher_runner import LauncherRunner
from acltuner.measure.runner import Result
from acltuner.tuner.space import SearchSpace

CLUSTERS = ((0,), (1,))
WORKLOADS = (1, 4, 16)
LEVELS = (1, 2)


def _pad_conv(h: int, c: int, oc: int, k: int, stride: int = 1, group: int = 1,
              w: int | None = None) -> ConvShape:
    p = k // 2
    return ConvShape(n=1, h=h, w=w or h, c=c, oc=oc, kh=k, kw=k, stride_h=stride,
                     stride_w=stride, pad_top=p, pad_left=p, pad_bottom=p, pad_right=p,
                     group=group)


TASKS: dict[str, ConvShape] = {
    **{name: replace(dict(LAYERS)[name], act="none")
       for name in ("resnet18.layer1", "resnet18.layer3.down3x3", "resnet18.layer4",
                    "resnet18.layer3.down1x1")},
    "pointwise.28x28x128-256": _pad_conv(28, 128, 256, 1),
    "depthwise.56x56x128": _pad_conv(56, 128, 128, 3, group=128),
    "depthwise.s2.28x28x256": _pad_conv(28, 256, 256, 3, stride=2, group=256),
    "first.224x224x3-32.s2": _pad_conv(224, 3, 32, 3, stride=2),
    "fc.1x1x1280-1000": _pad_conv(1, 1280, 1000, 1),
}


def reduced_space(client: LauncherClient, shape: ConvShape) -> SearchSpace:
    hello = client.hello_info
    family = [uk["name"] for uk in hello["ukernels"] if uk["isa"] == hello["isa"]]
    algorithms = [(a["name"], a["uses_ukernel"]) for a in hello["algorithms"]]
    return SearchSpace(shape, CLUSTERS, 2, algorithms, family, client.check,
                       workloads=WORKLOADS, levels=LEVELS)


def record(out_dir: Path, names: list[str]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = []
    with LauncherClient(timeout_s=300) as client:
        hello = client.hello_info
        for name in names:
            shape = TASKS[name]
            space = reduced_space(client, shape)
            runner = LauncherRunner(client)
            runner.load(shape)
            results: dict[ExecConfig, Result] = {}
            configs = space.all()
            for i in range(0, len(configs), 50):
                click.echo(f"  measuring {name}: {i}/{len(configs)}", err=True)
                results.update((r.config, r) for r, _ in runner.measure(configs[i:i + 50]))
            tasks.append(TaskTable(name, shape, results))
        used = {c.ukernel for t in tasks for c in t.results if c.ukernel}
        meta = {"engine": native.hello_engine_id(hello), "isa": hello["isa"],
                "measure": runner.options.label, "host": socket.gethostname(),
                "board": {"clusters": [{"core_type": "host", "cpus": list(c),
                                        "max_freq_mhz": 0} for c in CLUSTERS]},
                "ncores": 2, "clusters": [list(c) for c in CLUSTERS],
                "algorithms": [[a["name"], a["uses_ukernel"]] for a in hello["algorithms"]],
                "ukernels": {u["name"]: {k: u[k] for k in ("mr", "nr", "style")}
                             for u in hello["ukernels"] if u["name"] in used},
                "workloads": list(WORKLOADS), "levels": list(LEVELS)}
    path = out_dir / f"{hello['isa']}-2cpu.json"
    save_tables(path, Tables(meta, tasks))
    click.echo(f"wrote {path}: {len(tasks)} tasks, "
               f"{sum(len(t.results) for t in tasks)} measurements")
    return path

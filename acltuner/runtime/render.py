"""What `acltuner run` prints: text lines or one JSON object."""
from __future__ import annotations

import json

from acltuner.runtime.compare_ort import ComparedNode, OrtProfile
from acltuner.runtime.measure import Difference, Latency
from acltuner.runtime.profile import DELEGATED, NodeTime
from acltuner.runtime.program import Program


def delegated_share(program: Program, nodes: list[NodeTime]) -> list[dict]:
    """Each delegated segment: its nodes, operators and share of the run time."""
    share = {row.node: row for row in nodes if row.kind.startswith(DELEGATED)}
    out = []
    for d in program.delegated:
        row = share[", ".join(d.nodes)]
        out.append({"nodes": d.nodes, "op_types": d.op_types, "ms": row.ms,
                    "share": row.share})
    return out


Compared = tuple[OrtProfile, list[ComparedNode]]


def render_json(latency: Latency, rss_mb: float, program: Program, nodes: list[NodeTime],
                diff: Difference | None, profile: bool, compared: Compared | None = None) -> str:
    data = {"median_ms": latency.median_ms, "p10_ms": latency.p10_ms, "p90_ms": latency.p90_ms,
            "peak_rss_mb": rss_mb, "arena_bytes": program.arena_bytes,
            "delegated": delegated_share(program, nodes)}
    if diff is not None:
        data["max_abs_diff"], data["max_rel_diff"] = diff.max_abs, diff.max_rel
        data["check_passed"] = diff.passed
        data["check_tolerance"] = diff.tolerance
        data["max_quantized_steps"] = diff.max_steps
        judged = diff.float64
        data["float64_reference"] = None if judged is None else {
            "ours_max_rel_err": judged.ours, "onnxruntime_max_rel_err": judged.onnxruntime,
            "seconds": judged.seconds, "problem": judged.problem}
        steps = diff.steps64
        data["float64_reference_steps"] = None if steps is None else {
            "ours_max_steps": steps.ours, "onnxruntime_max_steps": steps.onnxruntime,
            "seconds": steps.seconds, "problem": steps.problem}
    if profile:
        data["nodes"] = [{"node": r.node, "op": r.op, "kind": r.kind, "ms": r.ms,
                          "share": r.share}
                         for r in nodes]
    if compared is not None:
        ort, rows = compared
        data["compare_ort"] = {
            "ort_median_ms": ort.median_ms, "ort_threads": ort.threads,
            "vs_onnxruntime": ort.median_ms / latency.median_ms,
            "nodes": [{"node": r.node, "kind": r.kind, "ours_ms": r.ours_ms, "ort_ms": r.ort_ms,
                       "lost_ms": r.lost_ms} for r in rows]}
    return json.dumps(data)  # one line: the last line of the output, for scripts


def render_text(latency: Latency, runs: int, warmup: int, rss_mb: float, program: Program,
                nodes: list[NodeTime], diff: Difference | None, profile: bool,
                compared: Compared | None = None) -> str:
    lines = [f"latency  median {latency.median_ms:.3f} ms  p10 {latency.p10_ms:.3f} ms  "
             f"p90 {latency.p90_ms:.3f} ms  ({runs} runs after {warmup} warmup)",
             f"peak RSS {rss_mb:.1f} MB, arena {program.arena_bytes / 2**20:.1f} MiB"]
    segments = delegated_share(program, nodes)
    if not segments:
        lines.append("delegated: none (every node runs natively)")
    for s in segments:
        lines.append(f"delegated: {', '.join(s['nodes'])} ({', '.join(s['op_types'])}), "
                     f"{100 * s['share']:.1f}% of the time")
    if diff is not None:
        lines.append(f"check vs onnxruntime: max abs diff {diff.max_abs:.3g}, "
                     f"max rel diff {diff.max_rel:.3g} (tolerance {diff.tolerance:g})")
        if diff.max_steps is not None:
            lines.append(f"check of the quantized outputs: {diff.max_steps:.3g} steps of their "
                         f"scale from onnxruntime's int8 at most")
        steps = diff.steps64
        if steps is not None and steps.ours is None:
            lines.append(f"check of the quantized outputs vs float64: no reference "
                         f"({steps.problem})")
        elif steps is not None:
            lines.append(f"check of the quantized outputs vs float64 ({steps.seconds:.1f} s): "
                         f"ours {steps.ours:.3g} steps, onnxruntime {steps.onnxruntime:.3g}")
        judged = diff.float64
        if judged is not None and judged.ours is None:
            lines.append(f"check vs float64: no reference ({judged.problem})")
        elif judged is not None:
            lines.append(f"check vs float64 ({judged.seconds:.1f} s): max rel diff ours "
                         f"{judged.ours:.3g}, onnxruntime {judged.onnxruntime:.3g}")
    if profile:
        width = max(len(r.node) for r in nodes)
        lines.append(f"{'node':{width}s}  {'ms':>9s}  {'share':>6s}  kind")
        lines += [f"{r.node:{width}s}  {r.ms:9.3f}  {100 * r.share:5.1f}%  {r.kind}"
                  for r in nodes]
    if compared is not None:
        lines += _comparison(latency, *compared)
    return "\n".join(lines)


def _comparison(latency: Latency, ort: OrtProfile, rows: list[ComparedNode]) -> list[str]:
    width = max(len(r.node) for r in rows)
    return [f"onnxruntime median {ort.median_ms:.3f} ms ({ort.threads} thread(s)): ours is "
            f"{ort.median_ms / latency.median_ms:.2f}x onnxruntime's speed",
            f"{'node':{width}s}  {'ours ms':>9s}  {'ort ms':>9s}  {'lost ms':>9s}  kind",
            *(f"{r.node:{width}s}  {r.ours_ms:9.3f}  {r.ort_ms:9.3f}  {r.lost_ms:9.3f}  {r.kind}"
              for r in rows)]

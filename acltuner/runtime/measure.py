"""Timing a program's runs, and checking its outputs against onnxruntime (and,
where the two disagree, both against a float64 reference)."""
from __future__ import annotations

import resource
import time
from dataclasses import dataclass

import numpy as np

from acltuner.onnx.onnxrt import session
from acltuner.runtime.profile import ProfileEntry
from acltuner.runtime.quant_steps import STEP_TOLERANCE, output_steps
from acltuner.runtime.program import Program
from acltuner.runtime.reference import reference


@dataclass(frozen=True)
class Latency:
    median_ms: float
    p10_ms: float
    p90_ms: float
    profiles: list[list[ProfileEntry]]  # one per timed run


def time_runs(program: Program, inputs: dict[str, np.ndarray], repeat: int,
              warmup: int) -> tuple[Latency, dict[str, np.ndarray]]:
    """Latencies of `repeat` runs after `warmup` untimed ones, and the last outputs."""
    for _ in range(warmup):
        program.run(inputs)
    times, profiles = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        outputs = program.run(inputs)
        times.append((time.perf_counter() - start) * 1e3)
        profiles.append(program.last_profile)
    p10, median, p90 = np.percentile(times, [10, 50, 90])
    return Latency(float(median), float(p10), float(p90), profiles), outputs


def peak_rss_mb() -> float:
    """This process's peak resident set (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worst(outputs: list[np.ndarray], references: list[np.ndarray]) -> tuple[float, float]:
    """(max |diff|, max |diff| / max |reference|) of the worst output.  A NaN
    or infinity where the reference has another value is an infinite
    difference (max() would skip a NaN); the same one in both is none."""
    max_abs = max_rel = 0.0
    for out, ref in zip(outputs, references):
        out64, ref64 = out.astype(np.float64), np.asarray(ref, np.float64)
        agree = (out64 == ref64) | (np.isnan(out64) & np.isnan(ref64))
        with np.errstate(invalid="ignore"):  # inf - inf, where they agree
            diff = np.where(agree, 0.0, np.abs(out64 - ref64))
        worst = float(np.max(np.nan_to_num(diff, nan=np.inf), initial=0.0))
        scale = float(np.max(np.abs(ref64[np.isfinite(ref64)]), initial=0.0))
        max_abs = max(max_abs, worst)
        max_rel = max(max_rel, worst / scale if scale else worst)
    return max_abs, max_rel


# Quantized outputs lie on their grid, so a difference in steps is whole but
# for the float rounding of (a - b) / scale.
_STEP_ROUNDING = 1e-3


@dataclass(frozen=True)
class Float64Judgement:
    """Both engines against a float64 reference, in the worst output: max
    |diff| / max |reference| for float outputs, steps of their scale for
    quantized ones; each None, with `problem`, when there is no reference."""
    ours: float | None
    onnxruntime: float | None
    seconds: float
    problem: str | None = None


@dataclass(frozen=True)
class Difference:
    max_abs: float
    max_rel: float  # max |diff| / max |onnxruntime's| of the worst output
    tolerance: float
    float64: Float64Judgement | None = None  # only when a float output is past tolerance
    # The outputs a DequantizeLinear makes (quant_steps): their largest
    # difference in steps of their quantization, judged by that alone, and
    # the float outputs' max_rel.  None: the model has no such output.
    max_steps: float | None = None
    float_rel: float | None = None
    # Only when max_steps is past STEP_TOLERANCE: the quantized outputs
    # against the quantized model run in float64 (every Q rounding exactly
    # as written), in steps.
    steps64: Float64Judgement | None = None

    @property
    def quantized_passed(self) -> bool:
        """Quantized outputs within STEP_TOLERANCE steps of onnxruntime's, or
        else no further from the float64 reference than onnxruntime's are:
        where a gate's narrow range turns one step of its input into many of
        its output, two correct int8 engines that round one sum differently
        end many steps apart, and the reference says which is nearer."""
        if self.max_steps is None or self.max_steps <= STEP_TOLERANCE + _STEP_ROUNDING:
            return True
        judged = self.steps64
        return judged is not None and judged.ours is not None and \
            judged.onnxruntime is not None and \
            judged.ours <= max(STEP_TOLERANCE, judged.onnxruntime) + _STEP_ROUNDING

    @property
    def passed(self) -> bool:
        """The quantized outputs as quantized_passed says, and the float ones
        within the tolerance of onnxruntime, or else of the float64 reference."""
        if not self.quantized_passed:
            return False
        if (self.max_rel if self.float_rel is None else self.float_rel) <= self.tolerance:
            return True
        return self.float64 is not None and self.float64.ours is not None and \
            self.float64.ours <= self.tolerance


def check(model_path: str, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray],
          tolerance: float, reference_timeout_s: float) -> Difference:
    """The outputs against onnxruntime running the original model on the same
    inputs: those a DequantizeLinear makes in their quantization's steps, the
    others relative to their largest value; where a float output differs by
    more than `tolerance`, the float ones against a float64 reference computed
    within reference_timeout_s, and where a quantized one differs by more
    than STEP_TOLERANCE steps, the quantized ones against it too."""
    names = list(outputs)
    theirs = dict(zip(names, session(model_path).run(names, inputs)))
    max_abs, max_rel = _worst(list(outputs.values()), list(theirs.values()))
    quantized = output_steps(model_path)
    floats = [n for n in names if n not in quantized]
    max_steps = max((quantized[n].steps(outputs[n], theirs[n]) for n in names if n in quantized),
                    default=None)
    float_rel = _worst([outputs[n] for n in floats], [theirs[n] for n in floats])[1] \
        if max_steps is not None else None
    float_far = (max_rel if float_rel is None else float_rel) > tolerance
    steps_far = max_steps is not None and max_steps > STEP_TOLERANCE + _STEP_ROUNDING
    stepped = [n for n in names if n in quantized] if steps_far else []
    judged = steps64 = None
    if float_far or steps_far:
        ref = reference(model_path, inputs, (floats if float_far else []) + stepped,
                        reference_timeout_s)
        if ref.outputs is None:
            nothing = Float64Judgement(None, None, ref.seconds, ref.problem)
            judged, steps64 = (nothing if float_far else None), (nothing if steps_far else None)
        else:
            if float_far:
                exact = [ref.outputs[n] for n in floats]
                judged = Float64Judgement(_worst([outputs[n] for n in floats], exact)[1],
                                          _worst([theirs[n] for n in floats], exact)[1],
                                          ref.seconds)
            if steps_far:
                steps64 = Float64Judgement(
                    max(quantized[n].steps(outputs[n], ref.outputs[n]) for n in stepped),
                    max(quantized[n].steps(theirs[n], ref.outputs[n]) for n in stepped),
                    ref.seconds)
    return Difference(max_abs, max_rel, tolerance, judged, max_steps, float_rel, steps64)

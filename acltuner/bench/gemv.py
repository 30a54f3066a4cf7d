"""`acltuner bench gemv`: batch-1 fully connected layers (M = 1) against the
machine's streaming-read bandwidth and onnxruntime, measured in the same run.

At M = 1 a MatMul reads each weight once and does one multiply-add with it,
so its ceiling is how fast the cores can stream the weights from DRAM: the
shapes are AlexNet's fc6 and fc7, whose weights (151 and 67 MB) are larger
than any cache here, so every run reads them from memory as a whole model does."""
from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import click
import numpy as np

from acltuner.engine import native
from acltuner.engine.timing import median_ms

# (label, K, N): y[1, N] = x[1, K] W[K, N]
SHAPES = [("alexnet.fc6 9216x4096", 9216, 4096), ("alexnet.fc7 4096x4096", 4096, 4096)]
_STREAM_MB = 512
_RUNS = 15


def _median_s(fn) -> float:
    return median_ms(fn, min_repeats=_RUNS, min_repeat_ms=0.0) / 1e3


def stream_read_gbps(threads: int) -> float:
    """GB/s of numpy's max over a 512 MB float32 array split over `threads`
    threads (reductions release the GIL).  max, not sum: sum's pairwise adds
    are slower than memory here, max's SIMD compares are not."""
    data = np.ones(_STREAM_MB * 2 ** 20 // 4, dtype=np.float32)
    parts = np.array_split(data, threads)

    def read_all() -> None:
        workers = [threading.Thread(target=np.max, args=(p,)) for p in parts]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    return data.nbytes / _median_s(read_all) / 1e9


def _ours_s(k: int, n: int, rng: np.random.Generator) -> tuple[float, str]:
    """The fastest micro-kernel and workload count over all cores at equal weight."""
    b = rng.standard_normal((k, n), dtype=np.float32)
    a = rng.standard_normal((1, k), dtype=np.float32)
    c = np.empty((1, n), dtype=np.float32)
    want = a.astype(np.float64) @ b
    cores = native.cpu_count()
    weights = (1,) * cores
    best = (float("inf"), "")
    for uk in native.ukernels():
        if (uk.kmax and not uk.kmin < k <= uk.kmax) or n % uk.n_multiple:
            continue
        gemm = native.Gemm(uk.name, b)
        try:
            for workloads in (cores, 4 * cores):
                s = _median_s(lambda: gemm.run(a, weights, workloads, out=c))
                if not np.allclose(c, want, rtol=1e-4, atol=1e-3 * np.abs(want).max()):
                    raise RuntimeError(f"{uk.name} at M = 1 gives a wrong result")
                best = min(best, (s, f"{uk.name}/w{workloads}"))
        finally:
            gemm.close()
    return best


def _numpy_s(k: int, n: int, rng: np.random.Generator) -> float:
    """numpy's BLAS (its sgemv, on its own threads)."""
    w = rng.standard_normal((k, n), dtype=np.float32)
    x = rng.standard_normal((1, k), dtype=np.float32)
    return _median_s(lambda: x @ w)


def _onnxruntime_s(k: int, n: int, rng: np.random.Generator) -> float:
    """onnxruntime's MatMul with W as an initializer, the better of 1 and 2 threads."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    w = rng.standard_normal((k, n), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "gemv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    feed = {"x": rng.standard_normal((1, k), dtype=np.float32)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gemv.onnx"
        onnx.save(model, path)
        best = float("inf")
        for threads in (1, 2):
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            best = min(best, _median_s(lambda: sess.run(None, feed)))
    return best


def run() -> float:
    rng = np.random.default_rng(0)
    cores = native.cpu_count()
    stream = {t: stream_read_gbps(t) for t in sorted({1, cores})}
    ceiling = max(stream.values())
    for t, gbps in stream.items():
        click.echo(f"streaming read (numpy max, {t} thread(s)): {gbps:.1f} GB/s")
    click.echo(f"{'shape':24s}{'weights MB':>11s}{'ours ms':>9s}{'GB/s':>7s}{'of stream':>10s}"
               f"{'ORT ms':>8s}{'BLAS ms':>9s}{'vs ORT':>8s}{'vs BLAS':>9s}  kernel")
    fractions = []
    for label, k, n in SHAPES:
        nbytes = 4 * k * n
        ours_s, kernel = _ours_s(k, n, rng)
        ort_s, blas_s = _onnxruntime_s(k, n, rng), _numpy_s(k, n, rng)
        fraction = nbytes / ours_s / 1e9 / ceiling
        fractions.append(fraction)
        click.echo(f"{label:24s}{nbytes / 1e6:11.0f}{ours_s * 1e3:9.2f}"
                   f"{nbytes / ours_s / 1e9:7.1f}{fraction:10.2f}{ort_s * 1e3:8.2f}"
                   f"{blas_s * 1e3:9.2f}{ort_s / ours_s:7.2f}x{blas_s / ours_s:8.2f}x  {kernel}")
    geomean = float(np.exp(np.mean(np.log(fractions))))
    click.echo(f"gemv_fraction_of_stream: {geomean:.3f}")
    return geomean

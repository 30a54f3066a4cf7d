"""acltuner: offline profiling-driven tuning of CNN inference on ARM big.LITTLE boards."""

__version__ = "0.1.0"


def load(plan_path, *, force=False, board=None, balance="adaptive"):
    """The model of a plan file, compiled with its tuned configs: a
    runtime.Program whose run(inputs) returns the outputs (see acltuner.runtime.load).
    balance="strict" runs each core's planned share on that core only; the
    default lets cores done early take over a late core's rest."""
    from acltuner.runtime import load as load_program  # lazily: `import acltuner` stays light
    return load_program(plan_path, force=force, board=board, balance=balance)

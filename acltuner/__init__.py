"""acltuner: offline profiling-driven tuning of CNN inference on ARM big.LITTLE boards."""

__version__ = "0.1.0"


def load(plan_path, *, force=False, board=None):
    """The model of a plan file, compiled with its tuned configs: a
    runtime.Program whose run(inputs) returns the outputs (see acltuner.runtime.load)."""
    from acltuner.runtime import load as load_program  # lazily: `import acltuner` stays light
    return load_program(plan_path, force=force, board=board)

"""acltuner: offline profiling-driven tuning of CNN inference on ARM big.LITTLE boards."""

__version__ = "0.1.0"


def load(plan_path, *, model=None, force=False, board=None, balance="adaptive"):
    """The model of a plan file (or `model`, the same model moved elsewhere),
    compiled with its tuned configs: a runtime.Program whose run(inputs)
    returns the outputs as a dict by output name (see acltuner.runtime.load):
    `acltuner.load("r18.plan.json").run(x)["output"]`.  balance="strict" runs
    each core's planned share on that core only; the default lets cores done
    early take over a late core's rest."""
    from acltuner.runtime import load as load_program  # lazily: `import acltuner` stays light
    return load_program(plan_path, model=model, force=force, board=board, balance=balance)

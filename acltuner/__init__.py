"""acltuner: offline profiling-driven tuning of CNN inference on ARM big.LITTLE boards."""

__version__ = "0.1.0"

"""Whole-model runs: a plan's model compiled to native operations (convolutions
with their tuned configs), onnxruntime running whatever the engine does not."""
from acltuner.runtime.load import compile_model, load
from acltuner.runtime.program import Program

__all__ = ["Program", "compile_model", "load"]

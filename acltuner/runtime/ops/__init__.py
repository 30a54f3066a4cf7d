"""The ONNX operators run natively (see registry.py); importing the modules
fills the tables."""
from acltuner.runtime.ops import elementwise, nn, norm, recurrent, reduce, resize, shape  # noqa: F401,E501  (they register)
from acltuner.runtime.ops.registry import HANDLERS, PATTERNS

__all__ = ["HANDLERS", "PATTERNS"]

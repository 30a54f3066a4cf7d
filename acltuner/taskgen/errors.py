"""The error of a model acltuner cannot read or tune."""
from __future__ import annotations

# Control characters in names taken from a model, written as escapes.
_ESCAPES = {c: repr(chr(c))[1:-1] for c in (*range(0x20), 0x7f)}


class ModelError(ValueError):
    """A model that acltuner cannot read or tune; the message is one line,
    whatever names from the model it quotes."""

    def __init__(self, message: str):
        super().__init__(message.translate(_ESCAPES))

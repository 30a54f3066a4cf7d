"""The base of the errors that quote what a file says: their message is one
line whatever it quotes, control characters written as escapes."""
from __future__ import annotations

_ESCAPES = {c: repr(chr(c))[1:-1] for c in (*range(0x20), 0x7f)}


class OneLineError(ValueError):
    def __init__(self, message: str):
        super().__init__(message.translate(_ESCAPES))

"""The error of a model acltuner cannot read or tune."""
from __future__ import annotations

from acltuner.one_line import OneLineError


class ModelError(OneLineError):
    """A model that acltuner cannot read or tune; the message is one line,
    whatever names from the model it quotes."""

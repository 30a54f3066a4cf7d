"""The error of a model acltuner cannot read or tune."""


class ModelError(ValueError):
    """A model that acltuner cannot read or tune; the message is one line."""

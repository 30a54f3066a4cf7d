"""The one-line error a loader gives for a bad file: it names the file and says what is wrong."""
import pytest


def load_error(load, path, text: str, error: type[Exception]) -> str:
    """Writes text to path, has load(path) fail with error, and returns the
    message after checking it is one line naming the file."""
    path.write_text(text)
    with pytest.raises(error) as e:
        load(path)
    message = str(e.value)
    assert str(path) in message and "\n" not in message
    return message

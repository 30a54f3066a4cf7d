"""Edits of one field of a JSON document, for the schema-error tests of plans and records."""


def set_field(path: str, value):
    """A change to the field at a dotted path, with [i] for list items; value
    KeyError deletes the field instead."""
    def change(d: dict) -> None:
        keys = path.replace("[", ".").replace("]", "").split(".")
        for key in keys[:-1]:
            d = d[int(key) if key.isdigit() else key]
        leaf = int(keys[-1]) if keys[-1].isdigit() else keys[-1]
        if value is KeyError:
            del d[leaf]
        else:
            d[leaf] = value
    return change


def set_node_config(node: dict, config: dict) -> None:
    """A plan node (as JSON) given another config by hand. A tune on a noisy host may
    have sent the node back to its default; that mark would make the edited plan
    invalid, so it goes with the edit."""
    node["config"] = config
    node.pop("reverted", None)

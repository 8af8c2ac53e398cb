"""Keyword arguments to stoker-node's flags, and the error a bad one
raises."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Optional, Union

PathLike = Union[str, "os.PathLike[str]"]


class ConfigError(ValueError):
    """A key, value or shape Stoker does not take; the message is the one
    stoker-node prints for it."""


def _value_text(section: Optional[str], key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(json.dumps(str(v)) for v in value) + "]"
    where = f"{section}[{key!r}]" if section else key
    raise ConfigError(f"{where} = {value!r}: expected a bool, number, "
                      f"string or list of strings")


def node_flags(config_file: Optional[PathLike],
               keys: Mapping[str, Any]) -> list[str]:
    """stoker-node's flags for a config file and keyword arguments: one dict
    per section (pipeline={"batch_size": 64}) or a top-level key
    (report="r.json"); Python names, '_' for '-'."""
    args = []
    if config_file is not None:
        args.append("--config-file=" + os.fspath(config_file))
    for name, value in keys.items():
        if "." in name or "-" in name:
            section, _, key = name.replace("-", "_").partition(".")
            raise ConfigError(
                f"{name!r} is a flat key; expected it in its section's "
                f"dict, e.g. {section}={{{key!r}: ...}}")
        if isinstance(value, dict):
            for key, v in value.items():
                if not isinstance(key, str) or "." in key or "-" in key:
                    raise ConfigError(
                        f"{name}[{key!r}]: expected a key's Python name "
                        f"(e.g. 'batch_size' for {name}.batch-size)")
                args.append(f"--{name}.{key.replace('_', '-')}="
                            + _value_text(name, key, v))
        else:
            args.append(f"--{name.replace('_', '-')}="
                        + _value_text(None, name, value))
    return args

"""Keyword arguments to stoker-node's flags, and the error a bad one
raises."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Callable, Mapping, Optional, Sequence, Union

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


def _reference(fn: Callable[..., Any]) -> str:
    """"module:name" by which a stage process imports `fn`: its own module
    and qualified name, else a module-level name bound to it (a transform
    object such as torchvision's T.TrivialAugmentWide())."""
    module, name = getattr(fn, "__module__", None), getattr(
        fn, "__qualname__", None)
    if (module and name and module != "__main__" and "<" not in name
            and _resolve(module, name) is fn):
        return f"{module}:{name}"
    for mod_name, mod in list(sys.modules.items()):
        if mod_name == "__main__" or mod is None:
            continue
        for attr, value in list(getattr(mod, "__dict__", {}).items()):
            if value is fn and not attr.startswith("_"):
                return f"{mod_name}:{attr}"
    raise ConfigError(
        f"transforms: {fn!r} cannot be imported by a stage process: define "
        f"it (or bind it to a name) at the top level of a module other "
        f"than __main__, e.g. my_aug.py: trivial_wide = "
        f"T.TrivialAugmentWide(), or pass the entry "
        f"\"python(MODULE:NAME)\"")


def _resolve(module: str, name: str) -> Any:
    value: Any = sys.modules.get(module)
    for part in name.split("."):
        value = getattr(value, part, None)
    return value


def python_stage_keys(keys: dict[str, Any],
                      transforms: Optional[Sequence[Any]]) -> dict[str, Any]:
    """`keys` with `transforms` (config entries as strings, or callables
    run as python(MODULE:NAME) stages) as pipeline.transforms, and, where
    a stage is in the chain, python.executable and python.path set to this
    interpreter and its sys.path (so the stage processes import what this
    process imports) unless given."""
    keys = dict(keys)
    pipeline = dict(keys.get("pipeline", {}))
    if transforms is not None:
        if "transforms" in pipeline:
            raise ConfigError("transforms= and pipeline['transforms'] are "
                              "both given; expected one")
        pipeline["transforms"] = list(transforms)
    entries = pipeline.get("transforms")
    if entries is None or isinstance(entries, str):
        return keys
    chain = []
    for entry in entries:
        if callable(entry):
            chain.append(f"python({_reference(entry)})")
        elif isinstance(entry, str):
            chain.append(entry)
        else:
            raise ConfigError(f"transforms: {entry!r}: expected an entry "
                              f"such as \"to-tensor\" or a callable")
    pipeline["transforms"] = chain
    keys["pipeline"] = pipeline
    if any(re.match(r"\s*python(-pil|-batch)?\s*\(", e) for e in chain):
        python = dict(keys.get("python", {}))
        python.setdefault("executable", sys.executable)
        here = [os.getcwd() if p == "" else p for p in sys.path]
        given = [os.fspath(p) for p in python.get("path", [])]
        python["path"] = given + [p for p in here
                                  if os.path.isdir(p) and p not in given]
        keys["python"] = python
    return keys

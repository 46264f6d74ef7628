"""One value parser for command lines and files: YAML 1.2 core-schema scalars (plain Python).

PyYAML implements YAML 1.1, which reads ``1e-3`` as a string (it wants a dot: ``1.0e-3``),
``yes``/``no``/``on``/``off`` as booleans, ``2024-01-01`` as a date and ``1_0`` as ten. Every
package reads ``--set KEY=VALUE`` and every YAML file (configs, network specs, search spaces,
demo configs) with the rules below instead, so a value means the same everywhere:

================================  ==========================================================
written                           read as
================================  ==========================================================
``1e-3``, ``2E-3``, ``.5``,       float (``1e1`` is the float 10.0; an integer config field
``1e1``, ``-1.5``, ``.inf``,      takes an integral float, see :mod:`llm_runs.config`)
``.nan``
``10``, ``-3``, ``0x10``,         int (``0x10`` = 16, ``0o17`` = 15)
``0o17``
``true``/``false`` (any case      bool
as ``True``, ``TRUE``)
``null``, ``~``, empty            None
``yes``, ``no``, ``on``,          string: YAML 1.2 has no such booleans, no dates and no
``off``, ``2024-01-01``,          digit separators, so these stay the text as written
``1_0``, ``1_0e-3``, ``0b1``
================================  ==========================================================

* :func:`parse_scalar`: one plain word (no YAML syntax) → its value.
* :func:`parse_value`: a ``--set`` value: a scalar, or YAML flow syntax (``[1e-3, 2]``,
  ``{a: 1}``) with the same scalar rules; malformed syntax is one :class:`ConfigError` line.
* :func:`parse_number`: a value that must be a number (``--param beta=.5``, ``--grid``).
* :func:`parse_int`: a value that must be an integer: an integral number as written
  (``1e3`` and ``64.0`` are 1000 and 64; ``2.5``, ``inf`` and ``1_0`` are refused).
  Every CLI's integer options (``--steps``, ``--n-eval``, ``--points``, ``--replicates``)
  read their values with it, through :class:`simulate.ArgumentParser`.
* :func:`load_yaml`: a whole YAML document with the same scalar rules; a mapping key
  given twice is an error (YAML forbids it; PyYAML kept the second value without a word).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ._errors import ConfigError

__all__ = ["load_yaml", "parse_int", "parse_number", "parse_scalar", "parse_value"]

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


def _int(text: str) -> int:
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _float(text: str) -> float:
    low = text.lower()
    if low.endswith(".inf"):
        return -math.inf if low.startswith("-") else math.inf
    if low == ".nan":
        return math.nan
    return float(text)


def parse_scalar(text: str) -> Any:
    """A plain scalar by YAML 1.2 core-schema rules: None, bool, int, float, else the string.

    >>> [parse_scalar(s) for s in ("1e-3", ".5", "0x10", "yes", "true", "2024-01-01", "1_0")]
    [0.001, 0.5, 16, 'yes', True, '2024-01-01', '1_0']
    """
    if _NULL.match(text):
        return None
    if _BOOL.match(text):
        return text.lower() == "true"
    if _INT.match(text):
        return _int(text)
    if _FLOAT.match(text):
        return _float(text)
    return text


def _loader() -> type:
    """A PyYAML ``SafeLoader`` whose plain scalars resolve by :func:`parse_scalar`'s rules."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {}  # drop every YAML 1.1 rule (bool, int, float, date)
    rules = (
        ("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""]),
        ("tag:yaml.org,2002:bool", _BOOL, list("tTfF")),
        ("tag:yaml.org,2002:int", _INT, list("-+0123456789")),
        ("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789")),
    )
    for tag, regex, first in rules:
        Loader.add_implicit_resolver(tag, regex, first)
    for tag in ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"):  # YAML's own keys
        for key, pairs in yaml.SafeLoader.yaml_implicit_resolvers.items():
            for t, regex in pairs:
                if t == tag:
                    Loader.add_implicit_resolver(t, regex, [key])

    def scalar(convert: Any) -> Any:
        return lambda loader, node: convert(loader.construct_scalar(node))

    def mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:  # a key twice: neither value silently wins
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                key_node, yaml.ScalarNode
            ):
                continue  # a merge (<<) may override; only plain keys are compared
            key = loader.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicated key {key!r} (lines {seen[key]} and "
                    f"{key_node.start_mark.line + 1})", key_node.start_mark,
                )  # fmt: skip
            seen[key] = key_node.start_mark.line + 1
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    Loader.construct_mapping = mapping  # pyright: ignore[reportAttributeAccessIssue]
    Loader.add_constructor("tag:yaml.org,2002:bool", scalar(lambda s: s.lower() == "true"))
    Loader.add_constructor("tag:yaml.org,2002:int", scalar(_int))
    Loader.add_constructor("tag:yaml.org,2002:float", scalar(_float))
    return Loader


_LOADER: type | None = None


def load_yaml(text: str) -> Any:
    """Parse a YAML document with YAML 1.2 core-schema scalars (see the module's table).

    Raises:
        yaml.YAMLError: malformed YAML (the file readers turn it into one error line).
    """
    import yaml

    global _LOADER
    if _LOADER is None:
        _LOADER = _loader()
    return yaml.load(text, Loader=_LOADER)  # a SafeLoader subclass: no arbitrary objects


def parse_value(text: str, *, what: str = "value") -> Any:
    """A command-line value (``--set KEY=VALUE``'s VALUE): :func:`parse_scalar` for a plain
    word, YAML flow syntax (lists, mappings, quoted strings) with the same scalar rules.

    Raises:
        ConfigError: malformed syntax (``[1``), as one line naming ``what``.
    """
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{'\"!&*|>%@`#":
        return parse_scalar(stripped)
    try:
        return load_yaml(stripped)
    except Exception as err:  # yaml.YAMLError and friends: one line
        why = getattr(err, "problem", None) or " ".join(str(err).split()) or type(err).__name__
        raise ConfigError(f"{what}: cannot parse {text!r} ({why})") from None


#: Python's spellings of the non-finite numbers: read as numbers, refused by range checks
_NON_FINITE = ("inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "nan")


def parse_number(text: str, *, what: str = "value") -> float:
    """A command-line value that must be a number: :func:`parse_scalar`'s int or float
    (``2e-3``, ``.5``, ``0x10``), as a float.

    >>> [parse_number(s) for s in ("2e-3", ".5", "0x10", "1e1")]
    [0.002, 0.5, 16.0, 10.0]

    Raises:
        ConfigError: a word, a boolean, ``1_0`` or ``1_0e-3`` (``what: '1_0' is not a
            number``), as one line.
    """
    if text.strip().lower() in _NON_FINITE:
        return float(text)
    value = parse_value(text, what=what)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{what}: {text.strip()!r} is not a number")
    return float(value)


def parse_int(text: str, *, what: str = "value") -> int:
    """A command-line value that must be an integer: :func:`parse_number`'s number when it
    is integral (``1e3`` is 1000, ``64.0`` is 64, ``0x10`` is 16).

    >>> [parse_int(s) for s in ("10", "1e3", "64.0", "-3", "0x10")]
    [10, 1000, 64, -3, 16]

    Raises:
        ConfigError: not a number, or a number that is not an integer (``2.5``, ``inf``),
            as one line naming ``what``.
    """
    value = parse_value(text, what=what)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = parse_number(text, what=what)
    if not math.isfinite(number) or not number.is_integer():
        raise ConfigError(f"{what}: {text.strip()!r} is not an integer")
    return int(number)

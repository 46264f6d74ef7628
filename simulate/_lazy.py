"""Package namespaces whose names load on first use (PEP 562), for ``simulate`` and
``calibrate``: ``import calibrate`` costs nothing until a name is looked up, so a command
imports only the modules its work needs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__`` for lazily loaded names.

    Args:
        package: The package's ``__name__``.
        table: Public name → the module that defines it, relative to ``package``
            (``"_solve"`` or ``"._solve"``).
        namespace: The package's ``globals()``: a name, once loaded, is kept there, so
            ``__getattr__`` runs once per name.

    Returns:
        ``(__getattr__, __dir__)``; ``__getattr__`` raises :class:`AttributeError` for a
        name not in ``table``.
    """

    def getattr_(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        rel = module if module.startswith(".") else f".{module}"
        value = getattr(importlib.import_module(rel, package), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(table))

    return getattr_, dir_

"""The command-line parser every CLI of the toolkit uses (plain Python).

argparse prints its usage and then ``prog: error: …`` on a bad option; the toolkit's rule is
one ``error: …`` line on stderr and exit 2 for every mistake (usage only with ``--help``).

Numbers are read by the toolkit's one value parser (:mod:`simulate._values`): an option
declared ``type=int`` takes any integral number as a user writes it (``1e3``, ``64.0``,
``0x10``; :func:`simulate.parse_int`) and refuses ``2.5`` or ``inf``; ``type=float`` takes
what :func:`simulate.parse_number` does (``2e-3``, ``.5``; not ``1_0``). A value that
starts with ``-`` and a digit (``--grid -1e-3,1e-3``, ``--param=-.5``) is a value, never an
option.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, NoReturn

from ._errors import ConfigError
from ._values import parse_int, parse_number

__all__ = ["ArgumentParser", "integer", "number"]


def integer(text: str) -> int:
    """argparse ``type`` of an integer option: :func:`simulate.parse_int` (``1e3`` is 1000).

    Raises:
        argparse.ArgumentTypeError: not an integral number (argparse's one error line).
    """
    try:
        return parse_int(text, what="value")
    except ConfigError:
        raise argparse.ArgumentTypeError(f"{text.strip()!r} is not an integer") from None


def number(text: str) -> float:
    """argparse ``type`` of a number option: :func:`simulate.parse_number` (``2e-3``, ``.5``).

    Raises:
        argparse.ArgumentTypeError: not a number (argparse's one error line).
    """
    try:
        return parse_number(text, what="value")
    except ConfigError:
        raise argparse.ArgumentTypeError(f"{text.strip()!r} is not a number") from None


#: A command-line word that is a number, not an option: ``-1``, ``-1e-3,2``, ``-.5``.
_NEGATIVE = re.compile(r"^-\.?[0-9]")


class ArgumentParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose errors are one ``error:`` line (exit 2), whose
    ``type=int`` and ``type=float`` options read numbers by the toolkit's one rule
    (:func:`integer`, :func:`number`), and where ``-1e-3,...`` is a value; its subcommands'
    parsers are of the same class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("type", int, integer)  # every type=int option, groups included
        self.register("type", float, number)
        self._negative_number_matcher = _NEGATIVE

    def error(self, message: str) -> NoReturn:
        """Print ``error: MESSAGE (see PROG --help)`` on stderr and exit 2."""
        self.exit(2, f"error: {' '.join(message.split())} (see {self.prog} --help)\n")

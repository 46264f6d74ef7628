"""The command-line parser every CLI of the toolkit uses (plain Python).

argparse prints its usage and then ``prog: error: …`` on a bad option; the toolkit's rule is
one ``error: …`` line on stderr and exit 2 for every mistake (usage only with ``--help``).
"""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["ArgumentParser"]


class ArgumentParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose errors are one ``error:`` line (exit 2); its
    subcommands' parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        """Print ``error: MESSAGE (see PROG --help)`` on stderr and exit 2."""
        self.exit(2, f"error: {' '.join(message.split())} (see {self.prog} --help)\n")

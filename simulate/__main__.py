"""``python -m simulate``: see :mod:`simulate._cli._core`."""

import sys

from ._cli._core import main

if __name__ == "__main__":
    sys.exit(main())

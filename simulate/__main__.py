"""``python -m simulate``: see :mod:`simulate._cli`."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())

"""simulate's private subpackage:
the ``python -m simulate`` command line: the main parser, phase diagrams, populations.
"""

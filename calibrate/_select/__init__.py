"""calibrate's private subpackage:
motif selection: fits per candidate, comparison, identification.
"""

"""calibrate's private subpackage:
the recommendation: search spaces, candidates, ranking, plots.
"""

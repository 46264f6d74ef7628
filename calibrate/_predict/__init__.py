"""calibrate's private subpackage:
forecasts of settings not yet run: the prediction, its checks, classifier, fast path and CLI.
"""

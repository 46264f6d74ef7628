"""calibrate's private subpackage:
the main job (``python -m calibrate demo``): config, stages, report, CLI.
"""

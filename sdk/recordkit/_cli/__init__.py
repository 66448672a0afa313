"""The commands of the ``recordkit`` CLI, one small module per command group.

Each module defines a click command (or group) that :mod:`recordkit.cli` adds to the
``recordkit`` group. Modules import heavy dependencies (TensorFlow) inside the command
function, never at import time.
"""

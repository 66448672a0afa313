"""recordkit's built-in codecs.

Each module here is a plugin in its own right, declared in recordkit's pyproject under
the ``recordkit`` entry-point group exactly as a third-party plugin would be, and uses
only recordkit's public API. Block one with ``RECORDKIT_BLOCK_PLUGINS=<name>`` or
``rk.load_plugins(block=[...])`` like any other plugin.
"""

"""replctl: administration of causally consistent, geo-replicated event logs.

Nothing is imported here on purpose: `replctl --help` must stay fast (architecture.md).
"""

__version__ = "0.1.0.dev0"

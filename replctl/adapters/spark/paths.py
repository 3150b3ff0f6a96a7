"""Paths handed to Spark's readers, which expand Hadoop glob patterns in every path they are given."""

from __future__ import annotations

# Hadoop's glob syntax (org.apache.hadoop.fs.GlobPattern); a backslash makes the next character literal.
_GLOB_CHARACTERS = frozenset("\\*?[]{}")


def literal_path(path: str) -> str:
    """`path` escaped so that Spark reads exactly that file or folder, never what it matches as a pattern.

    A file named `events[1].parquet` would otherwise be "not found" (the pattern matches `events1.parquet`),
    and `in/*.parquet` would read every file the pattern matches.
    """
    return "".join(f"\\{ch}" if ch in _GLOB_CHARACTERS else ch for ch in path)

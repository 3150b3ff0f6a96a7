"""Alembic revisions of the replctl catalog (shipped with the package so `replctl db upgrade` finds them)."""

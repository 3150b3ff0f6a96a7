"""Alembic revisions of the replctl catalog, installed as `replctl.migrations` (so `replctl db upgrade` finds them
in the package; pyproject maps this folder there)."""

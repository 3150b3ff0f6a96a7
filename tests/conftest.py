"""Fixtures shared by every test folder.

Each topic keeps its fixtures in a helper module next to this file and is registered here as a plugin, so
this file stays a list: `pg` gives the catalog databases (`sqlite_url`, `postgres_url`, `catalog_url`),
`spark_session` the one Spark session of the run (`spark`), `managed_engine` the `--engine` option.
"""

pytest_plugins = ["pg", "spark_session", "managed_engine"]

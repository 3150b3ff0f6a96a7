"""The pure core: rules and planners. Stdlib and networkx only; no clock, file, env, DB, Spark, Typer or Rich."""

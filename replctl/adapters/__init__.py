"""Adapters: the imperative edge (catalog, log store, Spark). Each translates foreign errors into replctl's."""

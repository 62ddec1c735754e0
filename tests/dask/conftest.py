"""The dask tests' fixtures (defined in tests/dask_clusters.py, which test modules in other
folders import too: a module named conftest would clash with the other folders')."""

from __future__ import annotations

from dask_clusters import dask_client, dask_runtime, process_cluster, through_scheduler  # noqa: F401  (the fixtures)

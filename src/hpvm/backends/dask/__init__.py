"""The ``dask`` back end: graphs run on a Dask (``distributed``) cluster; see ``backend.py``."""

from .backend import DaskBackend

__all__ = ["DaskBackend"]

"""The ``tensor`` back end: graphs of tensor leaves on PyTorch (oneDNN / cuDNN)."""

from .backend import RootPlan, TensorBackend

__all__ = ["RootPlan", "TensorBackend"]

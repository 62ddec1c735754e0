"""The ``interp`` back end: the reference interpreter and oracle."""

from .executor import InstanceHandle, Interpreter, NodeOutputs

__all__ = ["InstanceHandle", "Interpreter", "NodeOutputs"]

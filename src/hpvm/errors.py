"""The error hierarchy: every mistake in a user's program or input is an ``HPVMError``.

Each subclass names one kind of mistake so callers (and tests) can catch precisely.
Messages name the culprit (node, port, file and line) and say how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    """A place in user source: where a node function was defined or a builder call was made."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


UNKNOWN_LOCATION = SourceLocation("<unknown>", 0)


class HPVMError(Exception):
    """Base class of every error caused by a user's program or input."""


class VerificationError(HPVMError):
    """The program breaks a rule of the HPVM specification (seed 000) or of DESIGN.md.

    ``problems`` lists every violation found, each already formatted with its location.
    """

    def __init__(self, problems: str | list[str]):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        if len(self.problems) == 1:
            super().__init__(self.problems[0])
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            super().__init__(f"{len(self.problems)} problems in the program:\n{lines}")


class TracingError(VerificationError):
    """An internal node did something other than build its child graph while being traced."""


class TypeAnnotationError(VerificationError):
    """A node function's parameter or return annotation is missing or not a port type."""


class ParseError(HPVMError):
    """Malformed HPVM text; carries ``line`` and ``column`` (1-based), and ``message``: what
    is wrong, without the place (for a caller that reports it at another place)."""

    def __init__(self, message: str, line: int, column: int, file: str = "<text>"):
        self.line, self.column, self.file, self.message = line, column, file, message
        super().__init__(f"{file}:{line}:{column}: {message}")


class CompileError(HPVMError):
    """A back end cannot compile a construct in a leaf node."""


class LaunchError(HPVMError):
    """Wrong launch arguments or a graph that cannot be launched as given."""


class RuntimeStateError(HPVMError):
    """An API call made in the wrong state: before ``init``, after ``cleanup``, push after wait."""


class MemoryTrackingError(HPVMError):
    """Memory-tracker misuse: an untracked array passed to a launch, untracking an unknown array."""


class NodeExecutionError(HPVMError):
    """An exception raised inside a node while the graph ran; names the node and the instance."""


class OutOfBoundsError(NodeExecutionError):
    """A leaf indexed an array outside its bounds (checked by the ``interp`` back end)."""


class IllegalWriteError(NodeExecutionError):
    """A leaf wrote an array that its ``outs`` does not declare."""


class BarrierError(NodeExecutionError):
    """Instances of a leaf did not all reach the same barrier."""


class DisagreementError(NodeExecutionError):
    """Instances of a replicated node sent different values over an all-to-all edge (strict mode)."""


class DataRaceError(NodeExecutionError):
    """Two dynamic instances that may run at the same time touched one array element, at
    least one of them writing it, with no atomic and no barrier ordering them (checked by
    the ``interp`` back end); the message names both instances, their lines, the array and
    the index."""


class StreamError(HPVMError):
    """Streaming misuse: pop on a non-streaming launch, push after wait, pop with nothing to come."""


class OptionError(HPVMError, TypeError):
    """A back end's ``configure`` got an option value it cannot take (``checked="yes"``); a
    ``TypeError`` too, as Python's own calls raise for an argument of the wrong type."""


class BackendUnavailableError(HPVMError):
    """The requested back end does not exist or cannot run on this machine."""


class ClusterError(HPVMError):
    """The Dask cluster of ``target="dask"`` cannot be used: ``hpvm.init(dask=...)`` got
    something that is not a scheduler address or a ``distributed.Client``, or the scheduler
    did not answer within the connection timeout."""


class HPVMWarning(UserWarning):
    """Warnings the runtime gives about legal but suspicious programs."""


class TensorShapeError(HPVMError):
    """A tensor operation (``hpvm.tensor.*``) got an operand of the wrong rank, shape or
    dtype, or a bad scalar argument (a negative pad, a zero stride); the message names the
    operation, the operand and the bad shape, and how to fix it."""


class ModelImportError(HPVMError):
    """A model cannot be imported into a tensor DFG (``hpvm.tensor.from_torch``): it does not
    trace, its example input or weights are not float32 tensors, or its output is not one
    tensor; the message says what and how to fix it."""


class UnsupportedLayerError(ModelImportError):
    """A layer, function or argument of an imported model that the tensor path cannot
    express; the message names the layer (its torch.fx node and module type) and, for an
    argument, which one."""


class DeviceLimitError(LaunchError):
    """A graph needs more of a device resource than the device has (threads per block,
    shared memory); the message names the limit and the value."""

"""``TensorProgram``: an imported model as an HPVM program that supplies its own weights.

``hpvm.tensor.from_torch`` returns one. Calling it runs the HPVM-C host sequence —
``init``, ``track_memory`` for the input and every weight, ``launch``, ``wait`` — and hands
back the output as a NumPy array. ``save`` writes the program as a ``.hpvm`` file (docs/
text-format.md) with the weights and the example input beside it in a ``.npz``; the file
carries a host section, so ``hpvm run model.hpvm`` runs it on the saved example input and
``hpvm show model.hpvm`` draws it. ``TensorProgram.load`` reads the pair back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import LaunchError, MemoryTrackingError, ModelImportError
from ..ir.graph import InternalFunction, LeafFunction
from ..ir.host import host
from ..ir.tensorops.body import parse_tensor_leaf

INPUT_KEY = "__input__"  # the example input's name in the .npz (no parameter can have it)


class TensorProgram:
    """An imported model: the fused ``root``, the ``unfused_root`` and the weights.

    ``program(x, target=None)`` runs the model on a batch ``x`` (NumPy or torch, float32,
    shaped like the example input except for the batch size) and returns a NumPy array.
    ``target`` forces a back end (``"tensor"``, ``"interp"``…); ``None`` follows the leaves'
    ``TENSOR_TARGET`` hint. The weights are the root's array parameters after the input, in
    ``root.params`` order; the program passes them to every launch.
    """

    def __init__(
        self,
        root: InternalFunction,
        unfused_root: InternalFunction,
        weights: Sequence[np.ndarray],
        input_shape: tuple[int, ...],
        output_shape: tuple[int, ...],
        model_name: str,
        example_input: np.ndarray | None = None,
    ):
        self.root = root
        self.unfused_root = unfused_root
        self.weights = list(weights)
        self.input_shape = tuple(input_shape)
        self.output_shape = tuple(output_shape)
        self.model_name = model_name
        self.example_input = example_input  # saved with the program, for ``hpvm run``
        names = [p.name for p in root.params]
        if len(names) != len(self.weights) + 1:
            raise ModelImportError(
                f"the root '{root.name}' has {len(names)} parameters, but the program has "
                f"{len(self.weights)} weights and one input"
            )

    @property
    def node_count(self) -> int:
        """Nodes of the (fused) root graph: one per fused group of operations."""
        return len(self.root.graph.nodes)

    @property
    def unfused_node_count(self) -> int:
        """Nodes of the graph as imported: one per tensor operation."""
        return len(self.unfused_root.graph.nodes)

    def operations(self, fused: bool = True) -> list[list[str]]:
        """The tensor operations of each node of the (fused or unfused) graph, in order."""
        root = self.root if fused else self.unfused_root
        return [_operations(node.function) for node in root.graph.nodes]

    def __call__(self, x: Any, target: str | None = None, fused: bool = True) -> np.ndarray:
        """Run the model on the batch ``x``; the output as a NumPy array.

        ``fused=False`` runs the graph as imported (one node per operation), for comparison.
        """
        hpvm = host()
        batch = self._input(x)
        root = self.root if fused else self.unfused_root
        hpvm.init()  # does nothing if the runtime is running already
        hpvm.track_memory(batch)
        args = (batch, *self.weights)
        try:
            try:
                handle = hpvm.launch(root, args, target=target)
            except MemoryTrackingError:
                # The weights are tracked once, on the first call and again after a
                # cleanup() forgot them (launch checks tracking before anything runs):
                # tracking ~100 arrays on every call would cost more than some layers.
                for w in self.weights:
                    hpvm.track_memory(w)
                handle = hpvm.launch(root, args, target=target)
            outputs = hpvm.wait(handle)
        finally:
            hpvm.untrack_memory(batch)  # a copy made above: only this call knows it
        assert outputs is not None
        return _to_numpy(outputs[0])

    def _input(self, x: Any) -> np.ndarray:
        """A fresh float32 C-contiguous copy of ``x`` (NumPy or torch), shape-checked."""
        if type(x).__module__.startswith("torch"):
            x = x.detach().cpu().numpy()
        if not isinstance(x, np.ndarray):
            raise LaunchError(
                f"{self.model_name} program: the input must be a NumPy array or torch tensor, "
                f"not {type(x).__name__}"
            )
        expected = ("N", *self.input_shape[1:])
        if x.ndim != len(self.input_shape) or tuple(x.shape[1:]) != self.input_shape[1:]:
            raise LaunchError(
                f"{self.model_name} program: the input has shape {tuple(x.shape)}; it takes "
                f"({', '.join(map(str, expected))}) batches like the example input"
            )
        if x.dtype != np.float32:
            raise LaunchError(
                f"{self.model_name} program: the input is {x.dtype}; the tensor path computes in "
                "float32 — pass x.astype(np.float32)"
            )
        return np.array(x, dtype=np.float32, order="C", copy=True)

    # -- saving and loading ----------------------------------------------------------------

    def save(self, path: str | os.PathLike[str], fused: bool = True) -> Path:
        """Write ``path`` (a ``.hpvm`` program) and the weights beside it (same name, ``.npz``).

        Returns the path of the ``.npz``. The weights are root parameters, not constants, so
        they travel in the ``.npz``; the ``.hpvm`` file's host section loads them from there,
        so ``hpvm run path`` runs the model on the example input saved with it.
        """
        from ..ir.program_file import save_program

        path = Path(path)
        npz = path.with_suffix(".npz")
        root = self.root if fused else self.unfused_root
        example = self.example_input
        if example is None:
            example = np.zeros(self.input_shape, dtype=np.float32)
        arrays = {p.name: w for p, w in zip(root.params[1:], self.weights)}
        arrays[INPUT_KEY] = example
        save_program(root, path, host=_host_source(npz.name))
        np.savez(npz, **arrays)
        return npz

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TensorProgram:
        """Read a program written by ``save`` (the ``.hpvm`` file and its ``.npz``)."""
        from ..ir.program_file import load_program

        path = Path(path)
        npz = path.with_suffix(".npz")
        loaded = load_program(path)
        root = loaded.root
        try:
            with np.load(npz) as data:
                weights = [data[p.name] for p in root.params[1:]]
                example = data[INPUT_KEY]
        except (OSError, KeyError) as e:
            raise ModelImportError(f"{npz}: cannot read the weights of {path} ({e})") from None
        out = root.graph.out_binds[0].src.function.out_types[0]
        return cls(root, root, weights, tuple(example.shape), (-1,) * out.rank, root.name, example)

    def __repr__(self) -> str:
        return (
            f"<hpvm TensorProgram of {self.model_name}: {self.unfused_node_count} operation nodes "
            f"fused into {self.node_count}, input {self.input_shape}, {len(self.weights)} weights>"
        )


def _operations(fn: Any) -> list[str]:
    """The ``hpvm.tensor`` operations a leaf performs, in order."""
    if not isinstance(fn, LeafFunction):
        return [f"<{fn.kind} {fn.name}>"]
    return list(parse_tensor_leaf(fn).ops)


def _to_numpy(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _host_source(weights_file: str) -> str:
    """The saved file's host section: ``main(root, target)`` runs the model on the example
    input saved beside the file (``weights_file``, found next to the ``.hpvm`` file)."""
    return f'''import os

import numpy as np

import hpvm

WEIGHTS = {weights_file!r}
INPUT_KEY = {INPUT_KEY!r}


def main(root, target):
    """Run the imported model on the example input saved beside this file; print the output."""
    with np.load(os.path.join(os.path.dirname(__file__), WEIGHTS)) as data:
        args = [data[INPUT_KEY]] + [data[p.name] for p in root.params[1:]]
    for a in args:
        hpvm.track_memory(a)
    (out,) = hpvm.wait(hpvm.launch(root, tuple(args), target=target))
    out = out if isinstance(out, np.ndarray) else out.cpu().numpy()
    print(f"{{root.name}}: output {{out.shape}}, first row {{np.array2string(out.reshape(len(out), -1)[0], precision=4)}}")
'''


__all__ = ["INPUT_KEY", "TensorProgram"]

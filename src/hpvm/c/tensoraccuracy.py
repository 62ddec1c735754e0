"""The accuracy of a DNN program's result, reported as HPVM's tensor runtime reports it.

Why. HPVM's DNN programs end each batch with ``computeAccuracy3`` (or the runtime
controller's ``llvm_hpvm_invokeRtControl``) and HPVM's test scripts read what it leaves: the
lines it prints and the file ``final_accuracy`` it writes in the current directory. This
module does the same, with the same text, so output compared with HPVM's matches: the
class of a row is the first one no later class exceeds (HPVM's loop, with ``<``), the
accuracy the percentage of rows whose class is the label, computed in double and returned
as a float. Lines are printed through C's ``stdout`` so they come in order with the
program's own ``printf`` output.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

FINAL_ACCURACY = "final_accuracy"  # HPVM's file name, in the current directory


def chosen_classes(scores: np.ndarray) -> np.ndarray:
    """Row by row, the first column that no later column exceeds (HPVM's ``chosen``: a NaN
    is never chosen over an earlier column, nor replaces a NaN in column 0)."""
    chosen = np.zeros(scores.shape[0], dtype=np.int64)
    best = scores[:, 0].copy()
    for column in range(1, scores.shape[1]):
        better = best < scores[:, column]
        chosen[better] = column
        best[better] = scores[better, column]
    return chosen


def batch_accuracy(scores: np.ndarray, labels: np.ndarray) -> np.float32:
    """The percentage of rows of ``scores`` (N, classes) whose chosen class is the label,
    as HPVM computes it (in double, then stored as float)."""
    n = scores.shape[0]
    errors = int(np.count_nonzero(chosen_classes(scores) != labels.astype(np.int64)))
    return np.float32((n - errors) * 1.0 / n * 100.0)


def report_batch(scores: np.ndarray, labels: np.ndarray) -> np.float32:
    """Print a batch's accuracy as ``computeAccuracy3`` does; the accuracy."""
    accuracy = batch_accuracy(scores, labels)
    c_print(f"batch_dim = {scores.shape[0]}, num_classes = {scores.shape[1]} \n")
    c_print(f"****** Accuracy = {float(accuracy):f} \n\n")
    return accuracy


def report_final(accuracy: float) -> None:
    """``dumpFinalAccuracy``: print the accuracy as the final one and write it."""
    c_print(f"\n\n **** Final Accuracy = {float(np.float32(accuracy)):f} \n")
    write_final(accuracy)


def write_final(accuracy: float) -> None:
    """Write ``final_accuracy`` (the current directory) as HPVM does: ``std::fixed``, six decimals."""
    Path(FINAL_ACCURACY).write_text(f"{float(np.float32(accuracy)):f}")


class RunningAccuracy:
    """The runtime controller's average over the batches so far (float arithmetic, as HPVM's
    static ``average_accuracy``)."""

    def __init__(self) -> None:
        self.average = np.float32(0.0)
        self.count = 0

    def add(self, accuracy: np.float32) -> np.float32:
        self.average = np.float32(
            (accuracy + self.average * np.float32(self.count)) / np.float32(self.count + 1)
        )
        self.count += 1
        return self.average


def c_print(text: str) -> None:
    """Print ``text`` through C's ``stdout`` (stdio's buffer, which the program's ``printf`` fills)."""
    ctypes.CDLL(None).printf(b"%s", text.encode())


__all__ = [
    "FINAL_ACCURACY",
    "RunningAccuracy",
    "batch_accuracy",
    "chosen_classes",
    "report_batch",
    "report_final",
    "write_final",
]

"""What PREPARE's inlining buys (issue 21): each kernel prepared in the RFC's form (the node
function inlined into its task, its queries the loop's index) and in the form before it
(``llvm.prepare(root, inline=False)``: the task calls the leaf's body, which asks the
runtime for its index), both optimized by ``llvm.optimize(..., 2)``; then counted (vector
instructions, instructions, calls in the root and in what it calls) and timed.

How it runs them: seed 004's key assumption is that a parallel program may run on one
thread, so the optimized function is run as it is, sequentially, after *serial elision*
of the directives (the entry and exit calls dropped, each marker's result ``true``), JIT
compiled by llvmlite. The body's queries (in the called form) read the index the task
stores before each call (``@bench.index``), as a runtime's would. Each form also runs
elided and then optimized at -O2 again ("elided + O2"): what a sequential back end gets
once the markers are gone — LLVM's loop vectorizer leaves a loop holding the markers'
calls alone, and takes the instance loop once they are gone. The forms are timed
interleaved, median of ``--repeat`` runs each, on the same arrays, and checked against
NumPy. Run: ``python benchmarks/llvmpar_inline.py [--n N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import ctypes
import platform
import re
import statistics
import time
from typing import Any

import numpy as np

import hpvm
from hpvm import llvm

# -- the kernels ---------------------------------------------------------------------------


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def vadd(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i] = a[i] + b[i]


@hpvm.internal
def vector_add(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:]):
    node = hpvm.create_node_1d(vadd, a.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


@hpvm.leaf(ins=("a",), outs=("b",))
def smooth(a: hpvm.f32[:], b: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    n = hpvm.get_num_node_instances_x(hpvm.get_node())
    if 0 < i < n - 1:
        b[i] = (a[i - 1] + a[i] + a[i + 1]) * np.float32(1 / 3)


@hpvm.internal
def stencil(a: hpvm.f32[:], b: hpvm.f32[:]):
    node = hpvm.create_node_1d(smooth, a.shape[0])
    for port in range(2):
        hpvm.bind_in(node, port, port)


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def saxpy_row(a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :], s: hpvm.f32):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    for j in range(a.shape[1]):
        c[i, j] = s * a[i, j] + b[i, j]


@hpvm.internal
def rows(a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :], s: hpvm.f32):
    node = hpvm.create_node_1d(saxpy_row, a.shape[0])
    for port in range(4):
        hpvm.bind_in(node, port, port)


def _cases(n: int) -> list[tuple[str, Any, list[Any], Any]]:
    rng = np.random.default_rng(0)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    side = int(np.sqrt(n))
    a, b = f(n), f(n)
    sa, sb = f(n), np.zeros(n, np.float32)
    ra, rb = f(side, side), f(side, side)
    want_stencil = sb.copy()
    want_stencil[1:-1] = (sa[:-2] + sa[1:-1] + sa[2:]) * np.float32(1 / 3)
    return [
        ("vector add", vector_add, [a, b, np.zeros(n, np.float32)], a + b),
        ("3-point stencil", stencil, [sa, sb], want_stencil),
        ("row saxpy (inner loop)", rows, [ra, rb, np.zeros((side, side), np.float32), np.float32(1.5)],
         np.float32(1.5) * ra + rb),
    ]  # fmt: skip


# -- the two forms, counted and compiled ----------------------------------------------------

_QUERIES = {
    "getNode": "define ptr @bench.getNode() {\n  ret ptr null\n}",
    "getNodeInstanceID.x": "define i64 @bench.getNodeInstanceID.x(ptr %n) {\n"
    "  %v = load i64, ptr @bench.index\n  ret i64 %v\n}",
    "getNumNodeInstances.x": "define i64 @bench.getNumNodeInstances.x(ptr %n) {\n"
    "  %v = load i64, ptr @bench.count\n  ret i64 %v\n}",
}


def forms(root: Any) -> dict[str, str]:
    """The kernel prepared both ways and optimized at -O2 (the called form's task stores
    its index where the body's queries read it)."""
    called = llvm.prepare(root, inline=False)
    called = re.sub(
        r"^(  %\.n(\d+)\.x = add i64 %\.n\d+\.i, 0)$",
        r"\1\n  store i64 %.n\2.i, ptr @bench.index\n  store i64 %.n\2.nx, ptr @bench.count",
        called,
        flags=re.M,
    )
    called += "\n@bench.index = global i64 0\n@bench.count = global i64 0\n"
    return {"inlined": llvm.optimize(llvm.prepare(root), 2), "called": llvm.optimize(called, 2)}


def counts(text: str, root: str) -> dict[str, int]:
    """Vector instructions, instructions and calls (directives left out) in the root and
    the functions it calls."""
    reach, todo = set(), [root]
    bodies = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^define [^@]*@([^(]+)\(.*?\n(.*?)^\}", text, re.M | re.S)
    }
    while todo:
        f = todo.pop()
        if f in reach or f not in bodies:
            continue
        reach.add(f)
        todo += re.findall(r"call [^@]*@([-\w.$]+)\(", bodies[f])
    lines = [
        ln
        for f in reach
        for ln in bodies[f].splitlines()
        if ln.startswith("  ") and "llvm.directive" not in ln
    ]
    own = bodies[root].splitlines()
    return {
        "vector_in_task": sum(bool(re.search(r"<\d+ x ", ln)) for ln in own),
        "vector": sum(bool(re.search(r"<\d+ x ", ln)) for ln in lines),
        "instructions": len(lines),
        "calls": sum(" call " in f" {ln} " for ln in lines),
    }


def elide(text: str) -> str:
    """Serial elision: directives dropped, markers ``true``, queries defined."""
    text = re.sub(r"^  %[-\w.]+ = call token @llvm\.directive\.region\.entry\(\).*$", "", text, flags=re.M)
    text = re.sub(r"^  (?:tail )?call void @llvm\.directive\.region\.exit\(.*$", "", text, flags=re.M)
    text = re.sub(r"^  (%[-\w.]+) = (?:tail )?call i1 @llvm\.directive\.marker\(\).*$", r"  \1 = or i1 true, false",
                  text, flags=re.M)  # fmt: skip
    text = re.sub(r"^  (?:tail )?call i1 @llvm\.directive\.marker\(\).*$", "", text, flags=re.M)
    for name, definition in _QUERIES.items():
        if f"@llvm.hpvm.{name}(" in text:
            text = re.sub(rf"^declare [^@]*@llvm\.hpvm\.{re.escape(name)}\(.*$", "", text, flags=re.M)
            text = text.replace(f"@llvm.hpvm.{name}(", f"@bench.{name}(") + "\n" + definition + "\n"
    return text


class Compiled:
    """One form, JIT compiled; ``run(args)`` calls its root on NumPy arrays and scalars."""

    def __init__(self, text: str, root: str, args: list[Any]):
        import llvmlite.binding as binding

        binding.initialize_native_target()
        binding.initialize_native_asmprinter()
        module = binding.parse_assembly(text)
        module.verify()
        machine = binding.Target.from_default_triple().create_target_machine(
            cpu=binding.get_host_cpu_name(),
            features=binding.get_host_cpu_features().flatten(),
            opt=3,
            jit=True,
        )
        self.engine = binding.create_mcjit_compiler(module, machine)
        self.engine.finalize_object()
        types: list[Any] = []
        for a in args:
            types += [ctypes.c_void_p, ctypes.c_int64] if isinstance(a, np.ndarray) else [ctypes.c_float]
            if isinstance(a, np.ndarray) and a.ndim > 1:
                types += [ctypes.c_int64] * a.ndim
        self.fn = ctypes.CFUNCTYPE(None, *types)(self.engine.get_function_address(root))

    def run(self, args: list[Any]) -> None:
        values: list[Any] = []
        for a in args:
            if isinstance(a, np.ndarray):
                values += [a.ctypes.data, a.nbytes] + (list(a.shape) if a.ndim > 1 else [])
            else:
                values.append(ctypes.c_float(a))
        self.fn(*values)


def measure(n: int, repeat: int) -> list[dict[str, Any]]:
    rows = []
    for title, root, args, want in _cases(n):
        texts = forms(root)
        texts.update({f"{k}, elided + O2": llvm.optimize(elide(t), 2) for k, t in list(texts.items())})
        compiled = {k: Compiled(elide(t), root.name, args) for k, t in texts.items()}
        out = next(a for a in args[::-1] if isinstance(a, np.ndarray))
        for k, c in compiled.items():
            out[...] = 0
            c.run(args)
            assert np.allclose(out, want, rtol=1e-5, atol=1e-5), (title, k)
        times: dict[str, list[float]] = {k: [] for k in compiled}
        for _ in range(repeat):  # interleaved
            for k, c in compiled.items():
                start = time.perf_counter()
                c.run(args)
                times[k].append(time.perf_counter() - start)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append(
            {
                "kernel": title,
                "n": n,
                "counts": {k: counts(t, root.name) for k, t in texts.items()},
                "median_s": med,
                "ratio": med["called"] / med["inlined"],
            }
        )
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1 << 22)
    p.add_argument("--repeat", type=int, default=15)
    ns = p.parse_args()
    print(
        f"# {platform.processor() or platform.machine()}, {platform.python_version()}, n={ns.n}, repeat={ns.repeat}"
    )
    print("| kernel | form | vector instr. in the root (all) | instructions | calls | median | ÷ inlined |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in measure(ns.n, ns.repeat):
        for k in row["counts"]:
            c = row["counts"][k]
            ratio = "" if k == "inlined" else f"{row['median_s'][k] / row['median_s']['inlined']:.2f}×"
            print(
                f"| {row['kernel']} | {k} | {c['vector_in_task']} ({c['vector']}) | {c['instructions']} | {c['calls']} | "
                f"{row['median_s'][k] * 1e3:.2f} ms | {ratio} |"
            )


if __name__ == "__main__":
    main()

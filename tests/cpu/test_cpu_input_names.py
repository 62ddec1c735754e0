"""A graph's inputs may be named like what the cpu back end's generated code calls: a
builtin (``range``, ``min``, ``len``), a global of the generated module (``np``), a Python
keyword (HPVM-C's ``lambda``) or a name starting like the generated ones (``__h...``). The
graph functions name such an input otherwise (``graphscope.input_name``).

Found by parboil's sad written for HPVM-C (``tests/c/test_c_field_sad.py``): its root's
``long range`` (the search range) hid the builtin in every generated loop, and Numba refused
the graph ("Invalid use of int64 with parameters (int64, int64)"). Each case here failed so
on the cpu back end before; the interpreter always ran them."""

# No ``from __future__ import annotations``: the roots below are built with their port types
# as annotation *values*.

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.backends.cpu.graphscope import input_name

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


@hpvm.leaf(ins=("out",), outs=("out",))
def shifted(out: hpvm.i64[:], np: hpvm.i64, min: hpvm.i64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = i + np * min


@hpvm.internal()
def builtins_root(out: hpvm.i64[:], range: hpvm.i64, np: hpvm.i64, min: hpvm.i64):
    # ``range`` sizes the node and is read by the bounds check of ``out[i]``
    node = hpvm.create_node_1d(shifted, range)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 2, 1)
    hpvm.bind_in(node, 3, 2)


@hpvm.leaf(ins=("len", "vals"), outs=("len",))
def counted(len: hpvm.i32[:], vals: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(len, vals[i], 1)


@hpvm.internal()
def privatized_root(min: hpvm.i32[:], vals: hpvm.i32[:], prange: hpvm.i64):
    # ``min`` is privatized: the code making and folding its per-thread copies calls both
    # ``min`` and ``prange``
    node = hpvm.create_node_1d(counted, prange)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def test_the_generated_name_differs_only_where_the_programs_would_hide_something():
    assert [input_name(n) for n in ("width", "range", "np", "lambda", "__hn0_s0", "prange")] == [
        "width",
        "__hin_range",
        "__hin_np",
        "__hin_lambda",
        "__hin___hn0_s0",
        "prange",  # (no longer a global of the generated module: parallel_for.py)
    ]


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_inputs_named_like_builtins_and_globals_run(target):
    out = np.zeros(6, dtype=np.int64)
    hpvm.track_memory(out)
    hpvm.wait(hpvm.launch(builtins_root, (out, 5, 3, 7), target=target))
    hpvm.request_memory(out)
    np.testing.assert_array_equal(out, [21, 22, 23, 24, 25, 0])


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_privatized_array_named_min_counts_exactly(target):
    vals = (np.arange(5000, dtype=np.int32) * 7) % 13
    counts = np.zeros(13, dtype=np.int32)
    for a in (counts, vals):
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(privatized_root, (counts, vals, vals.size), target=target))
    hpvm.request_memory(counts)
    np.testing.assert_array_equal(counts, np.bincount(vals, minlength=13))


def test_the_array_named_min_is_privatized():
    # (the compile report names it as the program does)
    assert [p[1] for p in get_backend("cpu").prepare(privatized_root).gen.privatized] == ["min"]

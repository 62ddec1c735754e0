"""The names of the cpu back end's generated modules and functions: unique in a program, and
a stage's module named after what it calls (``cpu/graphgen.py``, ``cpu/compiler.py``).

Internal functions made by one factory function (a wrapper per stage, as HPVM's pipeline
writes its stages) share a name and a place; their graph functions once shared one symbol,
defined several times in one module, and the program could not be compiled. A stage's
module (streaming) calls its program's graph functions, whose module Numba's cached code
records by name; the same stage text in a program whose module is another (its leaves'
messages naming another checkout's files) found a cache entry naming a module this process
never made — ``No module named 'hpvm_generated.hpvm_graph_...'`` at the first pushed item."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.runtime import streaming


@hpvm.leaf(ins=("a",), outs=("b",))
def twice(a: hpvm.f64[:], b: hpvm.f64[:]) -> hpvm.f64[:]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] * 2.0
    return b


@hpvm.leaf(ins=("a",), outs=("b",))
def plus_one(a: hpvm.f64[:], b: hpvm.f64[:]) -> hpvm.f64[:]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] + 1.0
    return b


def wrapper(leaf):  # type: ignore[no-untyped-def]
    """An internal node replicating ``leaf`` over ``a``: one name, one place, per leaf."""

    @hpvm.internal()
    def stage(a: hpvm.f64[:], b: hpvm.f64[:]):
        node = hpvm.create_node_1d(leaf, a.shape[0])
        hpvm.bind_in(node, 0, 0)
        hpvm.bind_in(node, 1, 1)
        hpvm.bind_out(node, 0, 0)

    return stage


FIRST, SECOND, THIRD = wrapper(twice), wrapper(plus_one), wrapper(twice)


def chain(stream: bool):  # type: ignore[no-untyped-def]
    @hpvm.internal()
    def root(x: hpvm.f64[:], y: hpvm.f64[:], z: hpvm.f64[:], w: hpvm.f64[:]):
        a, b, c = hpvm.create_node(FIRST), hpvm.create_node(SECOND), hpvm.create_node(THIRD)
        hpvm.bind_in(a, 0, 0, stream=stream)
        hpvm.bind_in(a, 1, 1, stream=stream)
        hpvm.bind_in(b, 2, 1, stream=stream)
        hpvm.bind_in(c, 3, 1, stream=stream)
        hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, 0, stream=stream)
        hpvm.edge(b, c, hpvm.ALL_TO_ALL, 0, 0, stream=stream)
        hpvm.bind_out(c, 0, 0, stream=stream)

    return root


LAUNCHED, STREAMED = chain(False), chain(True)

pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


def arrays(k: int) -> tuple[np.ndarray, ...]:
    made = (np.arange(8.0) + k, np.zeros(8), np.zeros(8), np.zeros(8))
    for a in made:
        hpvm.track_memory(a)
    return made


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_three_wrappers_made_by_one_factory_compile_and_run(target: str) -> None:
    x, y, z, w = arrays(0)
    (out,) = hpvm.wait(hpvm.launch(LAUNCHED, (x, y, z, w), target=target))
    np.testing.assert_array_equal(hpvm.request_memory(out), (x * 2.0 + 1.0) * 2.0)
    if target == "cpu":
        symbols = set(get_backend("cpu").prepare(LAUNCHED).gen.symbols.values())
        assert len([s for s in symbols if "_graph_stage_" in s]) == 3  # (one per wrapper)


def test_a_stage_module_names_the_program_module_it_calls(monkeypatch) -> None:
    """Streamed as whole items (three stages, a 2-core view): the stage's generated text
    begins with the program's module name, so that its cache entry is the program's."""
    monkeypatch.setattr(streaming, "machine_cores", lambda: 2)
    items = [arrays(k) for k in range(3)]
    handle = hpvm.launch(STREAMED, None, stream=True, target="cpu")
    for item in items:
        hpvm.push(handle, item)
    for item in items:
        (out,) = hpvm.pop(handle)
        np.testing.assert_array_equal(hpvm.request_memory(out), (item[0] * 2.0 + 1.0) * 2.0)
    hpvm.wait(handle)
    program = get_backend("cpu").prepare(STREAMED)
    ((func, _),) = program.stages.values()
    with open(func.py_func.__code__.co_filename) as f:
        header = f.read().splitlines()[1]
    assert header == f"# calls into {program.module.__name__}"

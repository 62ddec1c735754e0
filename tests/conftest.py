"""Test-process set-up shared by every test.

GPU tests run on numba-cuda's simulator by default, so the suite runs (and the ``cuda`` back
end is available) on machines without an NVIDIA GPU. The variable must be set before
``numba.cuda`` is first imported and before ``hpvm`` decides which back ends are available
(at import), hence here. On a machine with a GPU, run the GPU tests for real with
``NUMBA_ENABLE_CUDASIM=0 pytest -m gpu tests/gpu`` (a value already set wins).
"""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

# pytest imports hpvm before this file runs (pyproject's filterwarnings names
# hpvm.errors.HPVMWarning), so the back ends were registered without the variable: decide
# again. numba itself is not imported by then (hpvm imports it lazily).
from hpvm.backends.cuda import register as _register_cuda  # noqa: E402

_register_cuda()


import pytest  # noqa: E402


@pytest.fixture
def hpvm_runtime():
    """hpvm's default runtime, initialised for one test and cleaned up after it. A module
    whose every test needs it says ``pytestmark = pytest.mark.usefixtures("hpvm_runtime")``."""
    import hpvm

    hpvm.init()
    yield
    hpvm.cleanup()


@pytest.fixture
def hpvm_runtime_stopped():
    """``hpvm_runtime``, and no thread of hpvm's left running once it is cleaned up (the
    streaming tests: every stage thread, replica and watcher must have stopped)."""
    import threading

    import hpvm

    hpvm.init()
    yield
    hpvm.cleanup()
    assert not [t for t in threading.enumerate() if t.name.startswith("hpvm-")]


@pytest.fixture
def checked():
    """The ``cpu`` back end's checked mode on for one test (``cpu.configure(checked=True)``),
    its previous options back after it."""
    from hpvm.backends import cpu

    previous = cpu.configure(checked=True)
    try:
        yield
    finally:
        cpu.configure(**previous)


@pytest.fixture(params=[True, False], ids=["from-ir", "from-syntax-tree"])
def interp_path(request):
    """Run the test twice: the interpreter's leaves from their leaf IR, then from their
    syntax tree (``running.interp_leaves_from``); the value is ``from_ir``."""
    from running import interp_leaves_from

    with interp_leaves_from(request.param):
        yield request.param


@pytest.fixture(params=["compiled", "python"])
def each_replay(request, monkeypatch):
    """The test once with the compiled replay (``runtime/fastpath.py``, the C extension) and
    once with the plans' generated Python replay: launch plans made in the test use the one
    named (plans made before are set aside). The compiled one is skipped, with the reason,
    where the extension was not built."""
    from hpvm.ir.weakid import WeakIdTable
    from hpvm.runtime import fastpath, plan

    if request.param == "compiled" and not fastpath.built():
        pytest.skip(fastpath.REASON or "the compiled replay is not built")
    monkeypatch.setattr(fastpath, "ENABLED", request.param == "compiled")
    monkeypatch.setattr(plan, "_PLANS", WeakIdTable())
    return request.param

"""Tracing kernel states (``svm.init(..., trace=True)``) and drawing the timeline."""

from __future__ import annotations

import numpy as np
import pytest

from hpvm import svm
from hpvm.svm.trace import intervals


class Task(svm.Kernel):
    pass


def test_a_traced_run_records_every_state_change_in_order(tmp_path):
    svm.init(svm.this_computer(cores=2), trace=True)
    gate = svm.Stream()
    svm.stream_init_ram(gate, "RAM", 0, 4, np.int32)
    first, second = Task(), Task()
    svm.kernel_init(first, "PROC0", None, lambda k: svm.stream_pop(gate))
    svm.kernel_init(second, "PROC0", None, lambda k: svm.kernel_pause(k))
    svm.kernel_run(first)
    svm.kernel_run(second)  # waits for PROC0
    svm.stream_push(gate, 1)
    svm.kernel_wait(second)  # PAUSED
    svm.kernel_run(second)
    svm.kernel_wait(second)
    svm.kernel_wait(first)
    events = svm.trace_events()
    assert [e.time for e in events] == sorted(e.time for e in events)
    assert [e.status for e in events if e.kernel == "first"] == [
        "UNSTARTED",
        "WAITING",
        "RUNNING",
        "FINISHED",
    ]
    assert [e.status for e in events if e.kernel == "second"] == [
        "UNSTARTED",
        "WAITING",
        "RUNNING",
        "PAUSED",
        "RUNNING",
        "FINISHED",
    ]
    assert {e.processor for e in events} == {"PROC0"}
    bars = intervals(events)[("second", "PROC0")]
    assert [status for _, _, status in bars] == ["WAITING", "RUNNING", "PAUSED", "RUNNING"]
    svm.cleanup()
    assert svm.trace_events() == events  # still there after cleanup
    picture = svm.draw_trace(tmp_path / "trace.png")
    assert picture.stat().st_size > 1000 and picture.read_bytes()[:4] == b"\x89PNG"


def test_no_trace_without_trace_true_and_bad_paths(tmp_path):
    svm.init(svm.this_computer(cores=1))
    with pytest.raises(svm.SVMError, match=r"no trace: start the SVM with svm.init\(machine, trace=True\)"):
        svm.trace_events()
    with pytest.raises(svm.SVMError, match="the trace is empty"):
        svm.draw_trace(tmp_path / "t.png", events=[])
    event = svm.TraceEvent(0.0, "k", "PROC0", "RUNNING")
    with pytest.raises(svm.SVMError, match="draw_trace: cannot write"):
        svm.draw_trace(tmp_path / "missing" / "t.png", events=[event])

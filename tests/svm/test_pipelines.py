"""Random pipelines (hypothesis): chains of user kernels and Moves joined by small
streams, with control code pausing and resuming a stage midway, give the sequential
result — and leave no thread behind."""

from __future__ import annotations

import threading

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm import svm


class AddStage(svm.Kernel):
    pass


def add_work(k: AddStage) -> None:
    while True:
        last = svm.stream_peek_eos(k.in_, 0)
        x = svm.stream_pop(k.in_) + k.amount
        if last:
            svm.stream_push_with_eos(k.out, x)
            return
        svm.stream_push(k.out, x)


stage = st.sampled_from(["add", "move"])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(stage, min_size=1, max_size=3),
    st.lists(st.integers(1, 5), min_size=3, max_size=3),
    st.lists(st.integers(-100, 100), min_size=1, max_size=40),
    st.integers(0, 2),
    st.integers(0, 40),
)
def test_random_pipelines_compute_the_sequential_result(stages, capacities, data, paused, pause_after):
    before = threading.active_count()
    svm.init(svm.this_computer(cores=3))
    try:
        n = len(data)
        svm.memory_view("RAM", 0, n, np.int64)[:] = data
        streams = [svm.Stream()]
        svm.stream_init_with_data_ram(streams[0], "RAM", 0, n, np.int64, n, True)
        kernels = []
        for i, kind in enumerate(stages):
            out = svm.Stream()
            svm.stream_init_ram(out, "RAM", 4096 * (i + 1), capacities[i], np.int64)
            if kind == "add":
                k = AddStage()
                svm.kernel_init(k, f"PROC{i}", None, add_work)
                k.in_, k.out, k.amount = streams[-1], out, i + 1
            else:
                k = svm.Move()
                svm.move_init(k, "DMA", streams[-1], out, svm.STREAM_LENGTH_ALL, True)
            streams.append(out)
            kernels.append(k)
        for k in kernels:
            svm.kernel_run(k)
        target = kernels[min(paused, len(kernels) - 1)]
        got: list[int] = []
        last_eos = False
        while not last_eos:
            if len(got) == min(pause_after, n - 1):
                svm.kernel_pause(target)
                svm.kernel_wait_multiple(target)  # PAUSED, or FINISHED if it got there first
                if svm.kernel_get_status(target) == svm.KERNEL_PAUSED:
                    svm.kernel_run(target)
            last_eos = svm.stream_peek_eos(streams[-1], 0)
            got.append(int(svm.stream_pop(streams[-1])))
        for k in kernels:
            svm.kernel_wait(k)
        added = sum(i + 1 for i, kind in enumerate(stages) if kind == "add")
        assert got == [x + added for x in data]
        assert all(svm.kernel_get_status(k) == svm.KERNEL_FINISHED for k in kernels)
    finally:
        svm.cleanup()
    assert threading.active_count() == before

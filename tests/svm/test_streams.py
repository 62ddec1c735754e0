"""Streams and memories from control code: the circular layout in real bytes, element
types, EOS tags, flags, FIFOs, bulk forms, and every error path (no hang)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hpvm import HPVMError, svm
from hpvm.svm import runtime as svm_runtime


def test_svm_functions_before_init_say_to_call_init():
    svm.cleanup()
    with pytest.raises(svm.SVMError, match=r"not initialised: call svm.init\(\)"):
        svm.stream_init_ram(svm.Stream(), "RAM", 0, 4, 4)


def test_memory_view_is_the_bytes_streams_read_and_write(computer):
    mem = svm.memory_view("RAM", 0x100, 6, np.int32)
    mem[:] = [10, 11, 12, 13, 14, 15]
    s = svm.Stream()
    svm.stream_init_with_data_ram(s, "RAM", 0x100, 6, np.int32, 4, True)
    assert svm.stream_pop(s) == 10 and svm.stream_peek(s, 2) == 13
    assert svm.stream_peek_eos(s, 2) and not svm.stream_peek_eos(s, 1)
    svm.stream_push(s, 99)  # slot 4 of the circular buffer
    svm.stream_push(s, 98)  # slot 5
    svm.stream_push(s, 97)  # wraps to slot 0
    assert mem.tolist() == [97, 11, 12, 13, 99, 98]
    assert svm.stream_pop_many(s, 6).tolist() == [11, 12, 13, 99, 98, 97]


def test_two_streams_on_the_same_address_alias(computer):
    a, b = svm.Stream(), svm.Stream()
    svm.stream_init_ram(a, "RAM", 64, 8, np.float64)
    svm.stream_push_many(a, [1.5, 2.5, 3.5])
    svm.stream_init_with_data_ram(b, "RAM", 64, 8, np.float64, 3, False)
    assert svm.stream_pop_many(b, 3).tolist() == [1.5, 2.5, 3.5]


def test_memory_and_location_errors_name_memory_address_and_count(computer):
    with pytest.raises(svm.SVMError, match=r"outside memory RAM .*address 0x3ffffffe, 4 bytes"):
        svm.memory_view("RAM", (1 << 30) - 2, 1, np.int32)
    with pytest.raises(
        svm.SVMError, match=r"'LOCAL' is not a memory of machine 'this computer' \(memories: RAM"
    ):
        svm.memory_view("LOCAL", 0, 1)
    with pytest.raises(svm.SVMError, match=r"stream_init_ram\(s\).*outside memory RAM"):
        s = svm.Stream()
        svm.stream_init_ram(s, "RAM", 1 << 30, 1, 4)
    with pytest.raises(svm.SVMError, match="count must be"):
        svm.memory_view("RAM", 0, -1)


def test_a_fifo_is_not_a_memory_and_a_memory_is_not_a_fifo(tiled):
    with pytest.raises(svm.SVMError, match="'FIFO12' is a FIFO"):
        svm.stream_init_ram(svm.Stream(), "FIFO12", 0, 4, 4)
    with pytest.raises(svm.SVMError, match="'LOCALMEM1' is not a FIFO.*it is a memory"):
        svm.stream_init_fifo(svm.Stream(), "LOCALMEM1", 4)


def test_element_sizes_in_bytes_give_bytes(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 4, 3)
    svm.stream_push(s, b"abc")
    svm.stream_push(s, bytearray(b"xyz"))
    assert svm.stream_pop(s) == b"abc" and svm.stream_peek(s, 0) == b"xyz"
    with pytest.raises(svm.SVMError, match="an element is 3 bytes, got 2 bytes"):
        svm.stream_push(s, b"no")


def test_structs_and_fixed_length_arrays_are_elements(computer):
    point = np.dtype([("x", np.float32), ("y", np.float32), ("tag", np.uint8)])
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 4, point)
    svm.stream_push(s, (1.0, 2.0, 7))
    got = svm.stream_pop(s)
    assert (got["x"], got["y"], got["tag"]) == (1.0, 2.0, 7)
    vec = np.dtype((np.int16, 3))
    t = svm.Stream()
    svm.stream_init_ram(t, "RAM", 256, 4, vec)
    svm.stream_push(t, [1, 2, 3])
    svm.stream_push_many(t, np.array([[4, 5, 6], [7, 8, 9]]))
    assert svm.stream_pop(t).tolist() == [1, 2, 3]
    assert svm.stream_pop_many(t, 2).tolist() == [[4, 5, 6], [7, 8, 9]]
    with pytest.raises(svm.SVMError, match="cannot store"):
        svm.stream_push(t, "not numbers")


@pytest.mark.parametrize("bad", [0, -2, True, object, np.dtype(object), "not a dtype"])
def test_bad_element_sizes_are_errors(computer, bad):
    with pytest.raises(svm.SVMError, match="element"):
        svm.stream_init_ram(svm.Stream(), "RAM", 0, 4, bad)


def test_bad_capacities_lengths_and_flags_are_errors(computer):
    s = svm.Stream()
    with pytest.raises(svm.SVMError, match="capacity must be a positive number"):
        svm.stream_init_ram(s, "RAM", 0, 0, 4)
    with pytest.raises(svm.SVMError, match="init_length 5 must be between 0 and the capacity 4"):
        svm.stream_init_with_data_ram(s, "RAM", 0, 4, 4, 5, False)
    with pytest.raises(svm.SVMError, match="flags 64 are not"):
        svm.stream_init_ram(s, "RAM", 0, 4, 4, 64)
    with pytest.raises(svm.SVMError, match="STREAM_UNALIASED_RAM cannot be set"):
        svm.stream_init_with_data_ram(s, "RAM", 0, 4, 4, 1, False, svm.STREAM_UNALIASED_RAM)
    with pytest.raises(svm.SVMError, match="expected an svm.Stream"):
        svm.stream_push([], 1)


def test_a_stream_that_was_never_initialised_is_b1(computer):
    with pytest.raises(svm.SVMRestrictionError, match="never initialised") as info:
        svm.stream_pop(svm.Stream())
    assert info.value.restriction == "B1"


def test_pop_or_peek_that_nothing_can_satisfy_raises_instead_of_hanging(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 4, np.int32)
    with pytest.raises(
        svm.SVMError, match=r"control code waits to pop from stream s .*0 of 4.*nothing can ever"
    ):
        svm.stream_pop(s)
    svm.stream_push(s, 1)
    with pytest.raises(svm.SVMError, match="waits to peek element 1 of stream s"):
        svm.stream_peek(s, 1)
    with pytest.raises(svm.SVMError, match=r"index must be in \[0, 4\)"):
        svm.stream_peek(s, 4)


def test_push_onto_a_full_stream_nobody_reads_raises_instead_of_hanging(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 2, np.int32)
    svm.stream_push_many(s, [1, 2])
    with pytest.raises(svm.SVMError, match=r"waits to push onto stream s \(RAM: 2 of 2"):
        svm.stream_push(s, 3)
    with pytest.raises(svm.SVMError, match="waits to push onto"):
        svm.stream_push_many(s, np.arange(5))


def test_multicast_pushes_onto_every_stream(computer):
    a, b = svm.Stream(), svm.Stream()
    svm.stream_init_ram(a, "RAM", 0, 4, np.int32)
    svm.stream_init_ram(b, "RAM", 64, 4, np.int32)
    svm.stream_push_multicast(5, a, b)
    svm.stream_push_multicast_with_eos(6, a, b)
    for s in (a, b):
        assert svm.stream_peek_eos(s, 1) and not svm.stream_peek_eos(s, 0)
        assert svm.stream_pop_many(s, svm.STREAM_LENGTH_ALL).tolist() == [5, 6]
    c = svm.Stream()
    svm.stream_init_ram(c, "RAM", 128, 4, np.float64)
    with pytest.raises(svm.SVMError, match="different element types"):
        svm.stream_push_multicast(1, a, c)
    with pytest.raises(svm.SVMError, match="at least one stream"):
        svm.stream_push_multicast(1)


def test_pop_many_through_eos_stops_at_the_first_tag(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 8, np.int32)
    svm.stream_push_many(s, [1, 2, 3], eos=True)
    svm.stream_push_many(s, [4, 5], eos=True)
    assert svm.stream_pop_many(s, svm.STREAM_LENGTH_ALL).tolist() == [1, 2, 3]
    assert svm.stream_pop_many(s, svm.STREAM_LENGTH_ALL).tolist() == [4, 5]
    assert svm.stream_pop_many(s, 0).tolist() == []
    with pytest.raises(svm.SVMError, match="n must be >= 0"):
        svm.stream_pop_many(s, -3)


def test_a_pop_many_that_can_never_finish_hands_back_what_it_popped(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 8, np.int32)
    svm.stream_push_many(s, [1, 2, 3])
    with pytest.raises(svm.SVMError, match="nothing can ever") as info:
        svm.stream_pop_many(s, 5)
    assert info.value.partial.tolist() == [1, 2, 3]
    svm.stream_push_many(s, [4, 5])  # no EOS: popping "through the EOS" cannot finish either
    with pytest.raises(svm.SVMError, match="nothing can ever") as info:
        svm.stream_pop_many(s, svm.STREAM_LENGTH_ALL)
    assert info.value.partial.tolist() == [4, 5]


def test_unordered_streams_cannot_be_peeked(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 4, np.int32, svm.STREAM_UNORDERED)
    svm.stream_push(s, 1)
    with pytest.raises(svm.SVMError, match="STREAM_UNORDERED"):
        svm.stream_peek(s, 0)
    assert svm.stream_pop(s) == 1


def test_fifo_streams_keep_the_fifo_state_across_initialisations(tiled):
    s = svm.Stream()
    svm.stream_init_fifo(s, "FIFO12", np.int32)
    assert s.capacity == 64
    svm.stream_push_many(s, np.arange(64))
    with pytest.raises(svm.SVMError, match="waits to push onto stream s"):
        svm.stream_push(s, 64)
    assert svm.stream_pop(s) == 0
    # A stream of 8-byte elements takes two 4-byte slots per element.
    wide = svm.Stream()
    svm.stream_init_fifo(wide, "FIFO23", np.float64)
    assert wide.capacity == 32


def test_fifo_reinitialised_while_holding_data_outside_assertion_mode():
    machine = svm.load_machine("pca_tiled")
    svm.init(machine)
    s, t = svm.Stream(), svm.Stream()
    svm.stream_init_fifo(s, "FIFO12", np.int32)
    svm.stream_push(s, 7)
    svm.stream_init_fifo(t, "FIFO12", np.int32)
    assert svm.stream_pop(t) == 7  # the FIFO's state is the FIFO's
    svm.stream_push(t, 8)
    with pytest.raises(svm.SVMError, match="FIFO FIFO12 still holds 1 element"):
        svm.stream_init_fifo(svm.Stream(), "FIFO12", np.float32)
    with pytest.raises(svm.SVMError, match="does not fit"):
        svm.stream_init_fifo(svm.Stream(), "FIFO23", np.dtype((np.float64, 40)))


def test_stream_flags_hints_are_checked_in_assertion_mode(tiled):
    s = svm.Stream()
    svm.stream_init_ram(s, "LOCALMEM1", 0, 2, np.int32, svm.STREAM_NEVER_WRAPS)
    svm.stream_push(s, 1)
    svm.stream_pop(s)
    svm.stream_push(s, 2)
    with pytest.raises(svm.SVMError, match="STREAM_NEVER_WRAPS but 3 elements"):
        svm.stream_push(s, 3)
    t = svm.Stream()
    svm.stream_init_ram(t, "LOCALMEM1", 64, 4, np.int32, svm.STREAM_ONE_EOS)
    svm.stream_push_with_eos(t, 1)
    with pytest.raises(svm.SVMError, match="STREAM_ONE_EOS"):
        svm.stream_push_with_eos(t, 2)


def test_an_empty_stream_is_still_true(computer):
    s = svm.Stream()
    assert s and len(s) == 0 and "not initialised" in repr(s)
    svm.stream_init_ram(s, "RAM", 0, 4, np.int32)
    assert s and len(s) == 0 and "0/4" in repr(s)


def test_svm_errors_are_hpvm_errors():
    assert issubclass(svm.SVMError, HPVMError) and issubclass(svm.SVMRestrictionError, svm.SVMError)


def test_a_helper_thread_that_uses_streams_counts_as_control_code(computer):
    """Control code may run on several threads: one that has used a stream and is still
    alive may push later, so a pop waiting for it is not reported as hopeless."""
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 4, np.int32)
    started = threading.Event()

    def helper():
        svm.stream_push(s, 1)
        started.set()
        time.sleep(0.05)
        svm.stream_push(s, 2)

    thread = threading.Thread(target=helper)
    thread.start()
    started.wait(5)
    assert svm.stream_pop(s) == 1
    assert svm.stream_pop(s) == 2  # waits for the helper instead of raising
    thread.join(5)
    with pytest.raises(svm.SVMError, match="nothing can ever"):
        svm.stream_pop(s)  # the helper has ended: now nothing can


def test_element_conversion_errors(computer):
    raw = svm.Stream()
    svm.stream_init_ram(raw, "RAM", 0, 8, 4)
    svm.stream_push(raw, np.int32(5))  # any 4-byte value: its bytes
    assert svm.stream_pop(raw) == np.int32(5).tobytes()
    with pytest.raises(svm.SVMError, match="6 bytes is not a whole number of 4-byte elements"):
        svm.stream_push_many(raw, np.zeros(3, np.int16))
    vec = svm.Stream()
    svm.stream_init_ram(vec, "RAM", 64, 8, np.dtype((np.int16, 3)))
    with pytest.raises(svm.SVMError, match=r"need arrays ending in shape \(3,\), got \(2, 2\)"):
        svm.stream_push_many(vec, np.zeros((2, 2)))
    ints = svm.Stream()
    svm.stream_init_ram(ints, "RAM", 128, 8, np.int32)
    with pytest.raises(svm.SVMError, match="cannot convert the values to elements of type int32"):
        svm.stream_push_many(ints, ["a", "b"])


def test_cleanup_wakes_a_control_thread_waiting_in_a_pop(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 4, np.int32)
    errors: list[BaseException] = []

    def helper():
        try:
            svm.stream_pop(s)  # waits: the main thread is alive and might push
        except svm.SVMError as exc:
            errors.append(exc)

    thread = threading.Thread(target=helper)
    thread.start()
    deadline = time.monotonic() + 5
    while not svm_runtime.context().waiters and time.monotonic() < deadline:  # the helper waits
        time.sleep(0.001)
    svm.cleanup()
    thread.join(5)
    assert not thread.is_alive()
    assert len(errors) == 1 and "cleaned up while control code waited" in str(errors[0])

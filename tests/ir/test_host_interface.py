"""ir/host.py: the host a front end's program runs on — the installed one, a fresh one per
program that runs as a process (``new_host``), and the one ``host()`` answers on a thread
while such a program's code runs (``using_host``)."""

from __future__ import annotations

import threading

import hpvm  # noqa: F401  (installs the runtime's host and factory)
from hpvm.ir import host as host_module
from hpvm.runtime import Runtime


def test_new_host_is_a_fresh_runtime_each_time():
    a, b = host_module.new_host(), host_module.new_host()
    assert isinstance(a, Runtime) and isinstance(b, Runtime) and a is not b
    assert a.tracker is not b.tracker
    assert host_module.host() is not a  # the process's host is still the runtime's API


def test_without_a_factory_new_host_is_the_installed_host():
    previous = host_module.provided()
    mine = object()
    try:
        host_module.provide_host(mine)  # type: ignore[arg-type]
        assert host_module.new_host() is mine
    finally:
        host_module.provide_host(*previous)
    assert host_module.provided() == previous


def test_using_host_answers_on_its_thread_only():
    mine, seen = object(), {}
    with host_module.using_host(mine):  # type: ignore[arg-type]
        assert host_module.host() is mine
        other = threading.Thread(target=lambda: seen.update(host=host_module.host()))
        other.start()
        other.join()
        with host_module.using_host(Runtime()):
            assert host_module.host() is not mine
        assert host_module.host() is mine  # (nested blocks put the outer one back)
    assert seen["host"] is not mine and host_module.host() is not mine

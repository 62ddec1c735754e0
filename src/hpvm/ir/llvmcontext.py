"""Parsing LLVM text in a context of its own, for every step that prints or keys on what
it parses: the C front end's passes, the link of several files and the upgrade of ``.ll``
input (``hpvm.c``), and the LLVM front end's import, export, PREPARE, OPTIMIZE and EXTRACT
(``hpvm.llvm``). It lives in ``ir`` because both front ends use it and ``hpvm.llvm`` may
not import ``hpvm.c`` (the layers of pyproject.toml).

Why not LLVM's global context (llvmlite's default): it keeps the named struct types of
every module still alive in the process (the ``llvm_native`` back end's JIT keeps every
leaf module it compiled), so a later module defining ``%struct.opts`` prints it as
``%struct.opts.0``, and the counter behind the suffix grows with everything the process
ever parsed. The program's text -- and every hash made of it: leaf names, the host
library's key, Numba's disk cache, the cpu back end's generated code -- then depended on
what the process had parsed before and on the timing of the threads ``sources.load``
translates files on (a shared context is not thread-safe either): a second process
compiled all of a program's leaves again, and an exported ``.ll`` differed from one run to
the next. Why the explicit disposal: disposing a context frees its modules, and a module
object collected after its context (the garbage collector picks the order in a cycle)
freed its module a second time -- a segmentation fault."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def own_context() -> Iterator[Callable[[str], Any]]:
    """``parse(text)`` → a module in a fresh context; on exit every module parsed (and not
    linked into another) is disposed, then the context. Use the modules inside only:
    print what is kept. ``RuntimeError`` from LLVM for text it cannot read, as
    ``llvm.parse_assembly``."""
    import llvmlite.binding as llvm

    context = llvm.create_context()
    modules: list[Any] = []

    def parse(text: str) -> Any:
        module = llvm.parse_assembly(text, context)
        modules.append(module)
        return module

    try:
        yield parse
    finally:
        for module in modules:
            module.close()  # (a no-op for one linked into another: LLVM destroyed it)
        context.close()


def machine_for(triple: str) -> Any:
    """The target machine of ``triple`` (the process's where empty) at its generic CPU — what
    LLVM's pass builder needs to run passes on a module of that triple (each function
    carries its own ``target-cpu`` where the producer set one, and the passes read that)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_triple(triple or llvm.get_process_triple()).create_target_machine()


def promoted_function(parse: Callable[[str], Any], text: str, function: str) -> Any:
    """``function`` of the module ``text``, parsed with ``parse`` (``own_context``'s), with
    its local slots promoted to SSA values by LLVM's SROA: ``optnone`` dropped first, which
    unoptimized code carries (``clang -O0``) and which makes every pass skip a function.
    Only slots whose address does not escape are promoted, and a slot's loads become what
    was stored in it, so what a reading of the result says of values holds for the function
    as written. ``RuntimeError`` where the text does not parse, ``NameError`` where it lacks
    the function."""
    import llvmlite.binding as llvm

    module = parse(re.sub(r"\boptnone\b", "", text))
    fn = module.get_function(function)
    passes = llvm.create_new_function_pass_manager()
    passes.add_sroa_pass()
    builder = llvm.create_pass_builder(machine_for(module.triple), llvm.create_pipeline_tuning_options())
    passes.run(fn, builder)
    return fn


__all__ = ["machine_for", "own_context", "promoted_function"]

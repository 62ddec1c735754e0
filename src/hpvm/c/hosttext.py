"""The host code of an HPVM-C program as the LLVM module its shared library is built from
(``hostlib.py`` builds it): the program's whole module, with

- every node function's body replaced by a trap: the graph runs on hpvm's back ends, the
  host only passes the function's address to ``__hpvm__launch`` (a table,
  ``__hpvm_c.roots``, gives the roots' addresses, ``static`` ones included);
- every HPVM-C host call (``__hpvm__launch``, ``llvm_hpvm_track_mem``, the tensor
  runtime's...) defined with the signature the program declared, calling through a
  function pointer, ``__hpvm_py.<name>``, that Python fills in after loading the library
  (one library instance per run, so each run has its own callbacks and no global state
  says which program is running); then, if the callback failed, jumping out of ``main``;
- any other HPVM-C function (the node calls, such as ``__hpvm__getNodeInstanceID_x``,
  named by helper functions that only nodes call) defined as a trap, so the library links;
- ``llvm.global_ctors`` / ``llvm.global_dtors`` taken out of the loader's hands: the
  wrapper of ``main`` (``__hpvm_c.main``) calls the constructors after the callbacks are
  in place (a static object's constructor may call the host API), then ``main``, then
  ``__cxa_finalize`` (``atexit`` handlers and static objects' destructors, in reverse
  order of construction, as ``exit`` runs them) and the destructors;
- no ``target datalayout`` / ``target triple``: the library is for this machine, whatever
  clang wrote the text (an ``.ll`` of HPVM's clang 9 names an older layout);
- in C++, a landing pad in that wrapper: an exception leaving a constructor or ``main`` is
  handed to Python (its type and ``what()``) where C++ would call ``std::terminate``.

**A failing host call** cannot raise through C frames. Its callback records the error and
sets ``__hpvm_c.failed``; the definition around it sees the flag and ``longjmp``\\ s back to
a ``_setjmp`` in the wrapper, which finishes as above and returns, so ``main``'s thread ends
and ``run`` raises the error. C frames have nothing to unwind; C++ destructors of the
locals of the functions left are skipped, as by ``exit``. Outside ``main`` (in a
destructor run after it) there is nowhere to jump: the call returns and ``run`` raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .module import Module, split_top

PY = "__hpvm_py."  # the callback pointers Python fills in
ESCAPE = "__hpvm_c."  # what this module adds
MAIN = ESCAPE + "main"
FAILED = ESCAPE + "failed"
ROOTS = ESCAPE + "roots"
UNCAUGHT = ESCAPE + "uncaught"  # the callback told of an exception that left main
_HPVM_API = re.compile(r"^(__hpvm__|llvm_hpvm_)")
_DECLARE = re.compile(r"^declare\b[^@]*@(\"[^\"]*\"|[-\w.$]+)\(")
_XTOR = re.compile(r"\{ i32 (\d+), ptr (@\"[^\"]*\"|@[-\w.$]+), ptr [^}]*\}")
_PLAIN = re.compile(r"[-\w.$]+")
_ATTACHMENT = re.compile(r" ![\w.]+ ![\d]+")


@dataclass(frozen=True)
class HostCall:
    """A host call's C signature as LLVM types: its result and parameters."""

    result: str
    params: tuple[str, ...]


def symbol(name: str) -> str:
    """``@name`` as LLVM text writes it (quoted when it has other characters)."""
    return f"@{name}" if _PLAIN.fullmatch(name) else f'@"{name}"'


@dataclass(frozen=True)
class HostModule:
    """The host module's text, and ``main``'s LLVM parameter types (``None``: no ``main``)."""

    text: str
    main_params: tuple[str, ...] | None


def host_module(
    text: str, node_functions: set[str], roots: list[str], calls: dict[str, HostCall], cxx: bool
) -> HostModule:
    """The host module of the program ``text`` (see the module docstring). ``calls``: every
    host call Python answers, by name (``UNCAUGHT`` among them); ``cxx``: the program is C++
    (its wrapper catches exceptions)."""
    module = Module.parse(text)
    by_start = {f.start: f for f in module.functions.values()}
    xtors: dict[str, list[tuple[int, str]]] = {"llvm.global_ctors": [], "llvm.global_dtors": []}
    declared: set[str] = set(module.functions) | set(module.globals)
    out: list[str] = []
    added: list[str] = []
    k = 0
    while k < len(module.lines):
        fn = by_start.get(k)
        if fn is not None:
            if fn.name in node_functions:
                out += [fn.define, "  call void @llvm.trap()", "  unreachable", "}"]
            else:  # (exported, so a crash report can name it: c/runtime/crash_report.c)
                out += [_exported(fn.define), *module.lines[fn.start + 1 : fn.end + 1]]
            k = fn.end + 1
            continue
        line = module.lines[k]
        k += 1
        if line.startswith(("target datalayout", "target triple")):
            continue  # (compiled for this machine: an older clang's .ll names an older layout)
        glob = line.split(" = ", 1)[0][1:].strip('"') if line.startswith("@") else None
        if glob in xtors:
            xtors[glob] = [(int(p), f) for p, f in _XTOR.findall(line)]
            continue
        m = _DECLARE.match(line)
        if m is None:
            out.append(line)
            continue
        name = m.group(1).strip('"')
        declared.add(name)
        if name in calls:
            params = [p.split()[0] for p in split_top(line[m.end() :])[0]]
            added += _definition(name, params, calls[name])
        elif _HPVM_API.match(name):  # a node call: never runs in the host
            head = _ATTACHMENT.sub("", line[len("declare") :])  # (a define carries them elsewhere)
            added += ["define" + head + " {", "  call void @llvm.trap()", "  unreachable", "}"]
        else:
            out.append(line)
    added += [f"{symbol(PY + name)} = global ptr null" for name in sorted(calls)]
    added += _support(roots, xtors)
    main = module.functions.get("main")
    if main is not None:
        added += _wrapper([p.type for p in main.params], xtors, cxx)
    wanted = {**_DECLARATIONS, **(_CXX_DECLARATIONS if cxx else {})}
    added += [d for name, d in wanted.items() if name not in declared]
    params = tuple(p.type for p in main.params) if main is not None else None
    return HostModule("\n".join(out + added) + "\n", params)


_LOCAL = re.compile(r"^define (?:internal |private )?((?:\w+ )*?)hidden ")
_LOCAL_LINKAGE = re.compile(r"^define (?:internal|private) ")


def _exported(define: str) -> str:
    """A ``define`` line with the function's symbol in the library's dynamic symbol table:
    ``static`` functions (internal) and C++'s hidden inline ones are given default linkage
    and visibility, so that ``dladdr`` names them when the program crashes in them. The
    library is loaded ``RTLD_LOCAL`` and linked ``-Bsymbolic``: its symbols never take the
    place of another library's, and a name two files declared static was made unique when
    the files were linked (``sources.py``)."""
    define = _LOCAL_LINKAGE.sub("define ", define)
    return _LOCAL.sub(lambda m: f"define {m.group(1)}", define)


#: What the added code calls, declared unless the program already declares it.
_DECLARATIONS = {
    "llvm.trap": "declare void @llvm.trap() cold noreturn nounwind",
    "llvm.va_start.p0": "declare void @llvm.va_start.p0(ptr)",
    "llvm.va_end.p0": "declare void @llvm.va_end.p0(ptr)",
    "_setjmp": "declare i32 @_setjmp(ptr) returns_twice",
    "longjmp": "declare void @longjmp(ptr, i32) noreturn",
    "__cxa_finalize": "declare void @__cxa_finalize(ptr)",
    "__dso_handle": "@__dso_handle = external hidden global i8",
}


def _definition(name: str, declared: list[str], call: HostCall) -> list[str]:
    """``name`` defined with the program's declared parameters (``...``: the rest read with
    ``va_arg``), calling its callback, then jumping out of main if the callback failed."""
    fixed = [t for t in declared if t != "..."]
    head = ", ".join([f"{t} %a{k}" for k, t in enumerate(fixed)] + (["..."] if "..." in declared else []))
    body = []
    args = [f"{t} %a{k}" for k, t in enumerate(fixed)]
    if "..." in declared:
        body += ["  %ap = alloca [32 x i8], align 16", "  call void @llvm.va_start.p0(ptr %ap)"]
        for k in range(len(fixed), len(call.params)):
            body.append(f"  %a{k} = va_arg ptr %ap, {call.params[k]}")
            args.append(f"{call.params[k]} %a{k}")
        body.append("  call void @llvm.va_end.p0(ptr %ap)")
    body.append(f"  %fn = load ptr, ptr {symbol(PY + name)}")
    invoke = f"call {call.result} %fn({', '.join(args)})"
    body.append(f"  {invoke}" if call.result == "void" else f"  %r = {invoke}")
    body.append(f"  call void @{ESCAPE}check()")
    body.append("  ret void" if call.result == "void" else f"  ret {call.result} %r")
    return [f"define {call.result} {symbol(name)}({head}) {{", *body, "}"]


def _support(roots: list[str], xtors: dict[str, list[tuple[int, str]]]) -> list[str]:
    """The jump buffer and flags, the check after each host call, the roots' table, and
    what runs after ``main`` (``finish``): ``__cxa_finalize``, then the destructors (by
    priority, highest first; the reverse of the constructors' order)."""
    dtors = [f for _, f in sorted(reversed(xtors["llvm.global_dtors"]), key=lambda e: -e[0])]
    table = ", ".join(f"ptr {symbol(r)}" for r in roots)
    return [
        f"@{ESCAPE}jmp = internal global [64 x i64] zeroinitializer, align 16",
        f"@{FAILED} = global i32 0",
        f"@{ESCAPE}in_main = internal global i32 0",
        f"@{ROOTS} = constant [{len(roots)} x ptr] [{table}]",
        f"define internal void @{ESCAPE}check() {{",
        f"  %f = load volatile i32, ptr @{FAILED}",
        f"  %m = load volatile i32, ptr @{ESCAPE}in_main",
        "  %both = and i32 %f, %m",
        "  %c = icmp ne i32 %both, 0",
        "  br i1 %c, label %out, label %ok",
        "out:",
        f"  call void @longjmp(ptr @{ESCAPE}jmp, i32 1)",
        "  unreachable",
        "ok:",
        "  ret void",
        "}",
        f"define internal void @{ESCAPE}finish() {{",
        f"  store volatile i32 0, ptr @{ESCAPE}in_main",
        "  call void @__cxa_finalize(ptr @__dso_handle)",
        *(f"  call void {f}()" for f in dtors),
        "  ret void",
        "}",
    ]


def _wrapper(main_params: list[str], xtors: dict[str, list[tuple[int, str]]], cxx: bool) -> list[str]:
    """``main``'s wrapper: the ``_setjmp`` a failing host call jumps to, the constructors
    (by priority, lowest first), ``main`` (given ``argc, argv`` when it takes them; a third
    parameter, ``envp``, gets ``null``), then ``finish``. In C++ (``cxx``) an exception
    that leaves a constructor or ``main`` is caught here and handed to Python
    (``UNCAUGHT``: its type and ``what()``), where C++ would call ``std::terminate`` and
    end the process."""
    params = "i32 %argc, ptr %argv" if main_params else ""
    actual = ["i32 %argc", "ptr %argv", *(f"{t} zeroinitializer" for t in main_params[2:])]
    ctors = [f for _, f in sorted(xtors["llvm.global_ctors"], key=lambda e: e[0])]
    calls = [f"call void {f}()" for f in ctors] + [
        f"%r = call i32 @main({', '.join(actual[: len(main_params)])})"
    ]
    body: list[str] = []
    for k, call in enumerate(calls):
        if cxx:
            body += [
                f"  {call.replace('call ', 'invoke ', 1)} to label %step{k} unwind label %uncaught",
                f"step{k}:",
            ]
        else:
            body.append(f"  {call}")
    personality = " personality ptr @__gxx_personality_v0" if cxx else ""
    return [
        f"define i32 @{MAIN}({params}){personality} {{",
        f"  %j = call i32 @_setjmp(ptr @{ESCAPE}jmp) returns_twice",
        "  %jumped = icmp ne i32 %j, 0",
        "  br i1 %jumped, label %failed, label %run",
        "run:",
        f"  store volatile i32 1, ptr @{ESCAPE}in_main",
        *body,
        f"  call void @{ESCAPE}finish()",
        "  ret i32 %r",
        "failed:",
        f"  call void @{ESCAPE}finish()",
        "  ret i32 -1",
        *(_uncaught() if cxx else []),
        "}",
    ]


def _uncaught() -> list[str]:
    """The landing pad of ``main``'s wrapper: the exception's type (demangled) and, for a
    ``std::exception``, its ``what()`` (the third slot of its vtable in the Itanium ABI)
    passed to Python's ``UNCAUGHT`` callback; then ``finish``."""
    return [
        "uncaught:",
        "  %lp = landingpad { ptr, i32 } catch ptr @_ZTISt9exception catch ptr null",
        "  %exc = extractvalue { ptr, i32 } %lp, 0",
        "  %sel = extractvalue { ptr, i32 } %lp, 1",
        "  %std = call i32 @llvm.eh.typeid.for.p0(ptr @_ZTISt9exception)",
        "  %is_std = icmp eq i32 %sel, %std",
        "  %obj = call ptr @__cxa_begin_catch(ptr %exc)",
        "  br i1 %is_std, label %what, label %report",
        "what:",
        "  %vtable = load ptr, ptr %obj",
        "  %slot = getelementptr ptr, ptr %vtable, i64 2",
        "  %what_fn = load ptr, ptr %slot",
        "  %message = call ptr %what_fn(ptr %obj)",
        "  br label %report",
        "report:",
        "  %said = phi ptr [ %message, %what ], [ null, %uncaught ]",
        "  %type = call ptr @__cxa_current_exception_type()",
        "  %name_at = getelementptr i8, ptr %type, i64 8",
        "  %name = load ptr, ptr %name_at",
        "  %readable = call ptr @__cxa_demangle(ptr %name, ptr null, ptr null, ptr null)",
        "  %none = icmp eq ptr %readable, null",
        "  %shown = select i1 %none, ptr %name, ptr %readable",
        f"  %tell = load ptr, ptr {symbol(PY + UNCAUGHT)}",
        "  call void %tell(ptr %shown, ptr %said)",
        "  call void @__cxa_end_catch()",
        f"  call void @{ESCAPE}finish()",
        "  ret i32 -1",
    ]


#: What the landing pad calls (C++ programs only).
_CXX_DECLARATIONS = {
    "__gxx_personality_v0": "declare i32 @__gxx_personality_v0(...)",
    "_ZTISt9exception": "@_ZTISt9exception = external constant ptr",
    "llvm.eh.typeid.for.p0": "declare i32 @llvm.eh.typeid.for.p0(ptr)",
    "__cxa_begin_catch": "declare ptr @__cxa_begin_catch(ptr)",
    "__cxa_end_catch": "declare void @__cxa_end_catch()",
    "__cxa_current_exception_type": "declare ptr @__cxa_current_exception_type()",
    "__cxa_demangle": "declare ptr @__cxa_demangle(ptr, ptr, ptr, ptr)",
}


__all__ = ["FAILED", "MAIN", "PY", "ROOTS", "UNCAUGHT", "HostCall", "HostModule", "host_module", "symbol"]

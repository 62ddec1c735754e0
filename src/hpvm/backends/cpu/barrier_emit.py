"""A barrier leaf's group function as Numba-Python, emitted from its phases
(``ir/leafir/phases.py``; ``barriers.py`` drives it).

Each phase becomes a work-item loop over the instances (x innermost, its bound narrowed
when the whole phase is ``if lid < u:``), with the per-instance slots of the varying locals
that cross barriers loaded before and stored after it, recomputed locals rebuilt, uniform
locals reset per instance, and leading statements every instance computes alike hoisted
out; drivers run once around their planned blocks; the final phase's ``return`` becomes the
value the group function returns (the last instance's). The code is written from the lowered
leaf IR (``LeafClone.ir``) with ``pyemit``'s writers: context reads become the group
function's loop variables, extents and parent context, atomics and ``malloc`` the back
end's ``__hpvm_<name>`` helpers. No Python is read.
"""

from __future__ import annotations

from ...errors import CompileError
from ...ir import instance_context as ictx
from ...ir.intrinsics import LOWERED_PREFIX
from ...ir.leafir import ops
from ...ir.leafir.phases import Item, Phase, Phases
from ...ir.leafir.pyemit import BlockWriter, PythonText, range_args
from .narrow import MASK
from .views import VIEW

# Names of the group function (the leaf's own names never start with "__hpvm").
IDS = ("__hpvm_i", "__hpvm_j", "__hpvm_k")
EXTENTS = ("__hpvm_s0", "__hpvm_s1", "__hpvm_s2")
DIMS = "__hpvm_dims"
# Which of them holds each value of the leaf's own level of the context.
OWN_LEVEL = {
    **{ictx.ID + axis: name for axis, name in enumerate(IDS)},
    **{ictx.EXTENT + axis: name for axis, name in enumerate(EXTENTS)},
    ictx.DIMS: DIMS,
}
PARENT = "__hpvm_ctx_parent"
TOTAL = "__hpvm_total"
FLAT = "__hpvm_f"
RET = "__hpvm_ret"
DONE = "__hpvm_done"
NP = "__hpvm_np"
MATH = "__hpvm_math"
_PAD = "    "

Lines = list[tuple[str, int]]


class _GroupText(PythonText):
    """Expressions of the group function: context reads as its names, lowered intrinsics as
    the back end's helpers (``__hpvm_atomic_add``, ``__hpvm_malloc``)."""

    np_name, math_name = NP, MATH

    def __init__(self, phases: Phases, parent_len: int):
        self.phases, self.parent_len, self.line = phases, parent_len, phases.ir.line

    def fail(self, what: str) -> CompileError:
        ir = self.phases.ir
        return CompileError(f"leaf '{ir.name}' ({ir.file}:{self.line}): {what}")

    def ctx_read(self, e: ops.CtxRead) -> str:
        if e.level == 0:
            return OWN_LEVEL[e.field]
        c = ictx.index(e.level - 1, e.field)
        if c >= self.parent_len:
            raise self.fail("a structure query the cpu back end cannot place")
        return f"{PARENT}[{c}]"

    def retype(self, e: ops.Retype) -> str:
        """``buffer.view(f32)`` as ``views.py``'s ``__hpvm_view``: Numba's own costs more than
        a block's tree reduction of 256 floats."""
        return f"{VIEW}({self.expr(e.array)}, {self.dtype(e.type.elem)})"

    def intrinsic(self, e: ops.IntrinsicOp) -> str:
        if not e.intrinsic.lowered_call:  # a barrier: phases hold none
            raise self.fail(f"hpvm.{e.intrinsic.name}() where the cpu back end cannot place it")
        return f"{LOWERED_PREFIX}{e.intrinsic.name}({self.arguments(e)})"


def _own_x(e: ops.Expr) -> bool:
    return isinstance(e, ops.CtxRead) and e.level == 0 and e.field == ictx.ID


class _Writer(BlockWriter):
    """Leaf statements in the group function: in the final phase ``return`` leaving the instance with its
    value in ``__hpvm_ret`` (a ``break`` out of a one-iteration loop, carried out of the
    leaf's own loops by ``__hpvm_done``)."""

    text: _GroupText

    def __init__(self, text: _GroupText):
        super().__init__(text)
        self.returning, self.loops = False, 0

    def stmt(self, stmt: ops.Stmt, depth: int, out: Lines) -> None:
        self.text.line = stmt.line
        pad = _PAD * depth
        if isinstance(stmt, ops.Return) and self.returning:
            out.extend(self.ret_assign(stmt, depth))
            if self.loops:
                out.append((f"{pad}{DONE} = True", stmt.line))
            out.append((f"{pad}break", stmt.line))
            return
        loop = isinstance(stmt, (ops.For, ops.While))
        self.loops += loop
        super().stmt(stmt, depth, out)
        self.loops -= loop
        if loop and self.returning and any(isinstance(s, ops.Return) for s in ops.walk_stmts(stmt.body)):
            out.append((f"{pad}if {DONE}:", stmt.line))
            out.append((f"{pad}{_PAD}break", stmt.line))

    def ret_assign(self, ret: ops.Return, depth: int) -> Lines:
        if not ret.values:
            return []
        value = self.text.expr(ret.values[0]) if len(ret.values) == 1 else f"({self.text.list(ret.values)},)"
        return [(f"{_PAD * depth}{RET} = {value}", ret.line)]


class GroupSource:
    """Writes the group function ``symbol`` of a leaf split into ``phases``, whose context
    tuples have ``ctx_levels`` levels."""

    def __init__(self, symbol: str, phases: Phases, ctx_levels: int):
        self.symbol, self.phases, self.ir = symbol, phases, phases.ir
        self.text = _GroupText(phases, ictx.STRIDE * (ctx_levels - 1))
        self.writer = _Writer(self.text)
        self.varying = phases.uniform.varying

    def source(self) -> str:
        return "\n".join(text for text, _ in self.lines()) + "\n"

    def lines(self) -> Lines:
        """The source's lines, each with the leaf's line it comes from (checked mode's
        messages name those: ``cpu/checked.py``'s ``checked_group``)."""
        ir = self.ir
        params = [*(p.name for p in ir.params), PARENT, *EXTENTS, DIMS]
        line = ir.line
        out: Lines = [
            (f"import numpy as {NP}", line),
            (f"import math as {MATH}", line),
            (f"def {self.symbol}({', '.join(params)}):", line),
            (f"{_PAD}{TOTAL} = {' * '.join(EXTENTS)}", line),
            (f"{_PAD}if {TOTAL} == 0:", line),
            (f"{_PAD * 2}return {self._empty_result()}".rstrip(), line),
        ]
        param_names = {p.name for p in ir.params}
        for name in sorted(self.phases.kept):
            dtype = self.text.dtype(ir.type_of(name))  # type: ignore[arg-type]
            out.append((f"{_PAD}__hpvm_p_{name} = {NP}.empty({TOTAL}, {dtype})", line))
            if name in param_names:
                out.append((f"{_PAD}__hpvm_p_{name}[:] = {name}", line))
        self._items(self.phases.items, 1, out)
        if any(isinstance(s, ops.Return) and s.values for s in ops.walk_stmts(ir.body)):
            out.append((f"{_PAD}return {RET}", line))
        return out

    def refcounted(self) -> bool:
        """Whether the group function makes or returns arrays, and so must be compiled with
        Numba's reference counting (NRT). Otherwise every array it holds is a parameter or
        a view of one (``buffer.view(f32)``, a row ``a[i]``), which the caller keeps alive for
        the whole call: compiled without NRT it takes no references. Why: with NRT, a
        function that can raise (``__hpvm_view``'s ``ValueError``) increments and decrements
        the count of every array parameter on each call — atomic operations on counts the
        threads share, once per parent instance — because Numba's pruning of those pairs
        gives up on a function with a raising path (measured on the block reduction: the
        group function 1.4× the same loops without the raising path, 1.0× without NRT)."""
        if self.phases.kept or any(not isinstance(t, ops.ScalarType) for t in self.ir.outputs):
            return True  # per-instance slots (np.empty), or an array returned
        for stmt in ops.walk_stmts(self.ir.body):
            for e in (x for top in ops.stmt_exprs(stmt) for x in ops.walk_expr(top)):
                if isinstance(e, ops.Alloc) or (
                    isinstance(e, ops.IntrinsicOp) and isinstance(e.type, ops.ArrayType)
                ):
                    return True  # a local array, malloc
        return False

    def _empty_result(self) -> str:
        """What a grid with no instances returns: zeros of the declared output types."""
        values = []
        for t in self.ir.outputs:
            if isinstance(t, ops.ArrayType):
                values.append(f"{NP}.empty(({', '.join(['0'] * t.rank)},), {self.text.dtype(t.elem)})")
            elif isinstance(t, ops.ScalarType):
                values.append("False" if t.dtype.kind == "b" else f"{self.text.dtype(t)}(0)")
            else:
                values.append("None")
        if len(values) == 1:
            return values[0]
        return f"({', '.join(values)},)" if values else ""

    def _items(self, items: tuple[Item, ...], depth: int, out: Lines) -> None:
        before = len(out)
        for item in items:
            if isinstance(item, Phase):
                self._phase(item, item.body, depth, out)
                continue
            s, pad = item.stmt, _PAD * depth
            if isinstance(s, (ops.Break, ops.Continue)):
                self.writer.stmt(s, depth, out)
                continue
            t = self.text
            self.text.line = s.line
            if isinstance(s, ops.For):
                out.append((f"{pad}for {s.var.name} in range({t.list(range_args(s))}):", s.line))
            else:
                keyword = "while" if isinstance(s, ops.While) else "if"
                out.append((f"{pad}{keyword} {t.expr(s.test)}:", s.line))  # type: ignore[attr-defined]
            self._items(item.body, depth + 1, out)
            if item.orelse:
                out.append((f"{pad}else:", s.line))
                self._items(item.orelse, depth + 1, out)
        if len(out) == before:
            out.append((f"{_PAD * depth}pass", self.ir.line))

    # -- one phase ------------------------------------------------------------------------

    def _phase(self, phase: Phase, body: ops.Block, depth: int, out: Lines) -> None:
        if self._runs_once(body):
            self.writer.block(body, depth, phase.body[0].line, out)
            return
        hoisted, kept, stored = [], [], set()
        for stmt in body:
            reads = (
                {e.name for e in ops.walk_expr(stmt.value) if isinstance(e, ops.Var)}
                if isinstance(stmt, ops.Assign)
                else set()
            )
            if not (reads & stored) and self._hoistable(stmt, body):
                hoisted.append(stmt)
                continue
            kept.append(stmt)
            stored |= _assigned((stmt,))
        if hoisted:
            self.writer.block(tuple(hoisted), depth, hoisted[0].line, out)
            if kept:
                self._phase(phase, tuple(kept), depth, out)
            return
        self._loop(phase, body, depth, out)

    def _loop(self, phase: Phase, body: ops.Block, depth: int, out: Lines) -> None:
        ph, locals_ = self.phases, self.phases.locals
        exposed = set(phase.exposed)
        resets = sorted((exposed & phase.assigned & locals_) - self.varying)
        loads = sorted(ph.kept & (exposed | (phase.assigned - phase.definite)))
        stores = [] if phase.final else sorted(ph.kept & phase.assigned)
        pre = [f"{n} = __hpvm_u_{n}" for n in resets]
        if loads or stores:
            pre.append(f"{FLAT} = ({IDS[0]} * {EXTENTS[1]} + {IDS[1]}) * {EXTENTS[2]} + {IDS[2]}")
        pre += [f"{n} = __hpvm_p_{n}[{FLAT}]" for n in loads]
        line = body[0].line
        pad, inner = _PAD * depth, depth + 3
        bound, body = self._x_bound(body, bool(pre or stores))
        out += [(f"{pad}__hpvm_u_{n} = {n}", line) for n in resets]
        # x innermost: the instances of a phase may run in any order, and with x inside LLVM
        # can vectorize the common 1-D case (its y and z loops run once); x's id narrowed
        # (narrow.py) for the same reason — where the phase adds or subtracts a constant.
        remats = self._remat_closure(exposed & set(ph.remat))
        x_id = f"{IDS[0]}_w"
        if _offsets((*body, *(ph.remat[n] for n in remats))):
            x_id = f"__hpvm_narrow({IDS[0]}_w, {EXTENTS[0]} <= {MASK})"
        out += [
            (f"{pad}for {IDS[2]} in range({EXTENTS[2]}):", line),
            (f"{pad}{_PAD}for {IDS[1]} in range({EXTENTS[1]}):", line),
            (f"{pad}{_PAD * 2}for {IDS[0]}_w in range({bound}):", line),
            (f"{_PAD * inner}{IDS[0]} = {x_id}", line),
        ]
        for name in remats:
            self.writer.stmt(ph.remat[name], inner, out)
        out += [(f"{_PAD * inner}{text}", line) for text in pre]
        self._final_returns(phase, body, inner, out)
        out += [(f"{_PAD * inner}__hpvm_p_{n}[{FLAT}] = {n}", line) for n in stores]

    def _final_returns(self, phase: Phase, body: ops.Block, depth: int, out: Lines) -> None:
        returns = [s for s in ops.walk_stmts(body) if isinstance(s, ops.Return)]
        if not phase.final or not returns:
            self.writer.block(body, depth, body[0].line, out)
            return
        if len(returns) == 1 and body[-1] is returns[0]:
            if body[:-1]:
                self.writer.block(body[:-1], depth, body[0].line, out)
            out += self.writer.ret_assign(returns[0], depth)
            return
        pad = _PAD * depth
        if any(isinstance(s, (ops.For, ops.While)) and _returns(s.body) for s in ops.walk_stmts(body)):
            out.append((f"{pad}{DONE} = False", body[0].line))
        out.append((f"{pad}for __hpvm_once in range(1):", body[0].line))
        self.writer.returning = True
        try:
            self.writer.block(body, depth + 1, body[0].line, out)
        finally:
            self.writer.returning = False

    def _runs_once(self, body: ops.Block) -> bool:
        """A phase that only assigns uniform locals from call-free expressions (``stride //= 2``)
        has no other effect: run it once, not once per instance."""
        for s in body:
            if not isinstance(s, ops.Assign) or s.target.name in self.varying:
                return False
            for e in ops.walk_expr(s.value):
                if isinstance(e, ops.Var) and e.name in self.varying:
                    return False
                if isinstance(e, (ops.Alloc, ops.IntrinsicOp)):
                    return False
        return True

    def _hoistable(self, stmt: ops.Stmt, body: ops.Block) -> bool:
        """A ``name = expr`` every instance computes alike, without reading memory: run it once
        before the instance loop (``shared = buffer.view(np.float32)`` per instance costs more
        than the reduction itself)."""
        if not isinstance(stmt, ops.Assign):
            return False
        name = stmt.target.name
        if name in self.varying or name in self.phases.kept:
            return False
        if sum(1 for s in ops.walk_stmts(body) if name in _assigned((s,), deep=False)) != 1:
            return False
        for e in ops.walk_expr(stmt.value):
            if isinstance(e, ops.Var) and (e.name in self.varying or e.name == name):
                return False
            if isinstance(e, (ops.Load, ops.Alloc)):
                return False  # a memory read: other instances may write it first
            if isinstance(e, ops.Retype) and not self.phases.shared_ref(e.array):
                return False
            if isinstance(e, ops.IntrinsicOp):
                return False  # an atomic, malloc
        return True

    def _x_bound(self, body: ops.Block, extra: bool) -> tuple[str, ops.Block]:
        """The x extent, narrowed when the whole phase is ``if lid < u:`` (``lid`` the x id,
        ``u`` uniform): a tree reduction's phases then visit only the active instances."""
        bound = EXTENTS[0]
        remat = self.phases.remat
        lead = 0
        while lead < len(body) and _recomputes(body[lead], remat):
            lead += 1
        rest = body[lead:]
        if extra or len(rest) != 1 or not isinstance(rest[0], ops.If) or rest[0].orelse:
            return bound, body
        test = rest[0].test
        ids = {n for n, s in remat.items() if _own_x(s.value)}
        if not (
            isinstance(test, ops.Compare)
            and len(test.ops) == 1
            and test.ops[0] in ("<", "<=", "==")
            and (
                (isinstance(test.operands[0], ops.Var) and test.operands[0].name in ids)
                or _own_x(test.operands[0])
            )
            and self.phases.uniform.is_uniform(test.operands[1], rest[0])
            and all(_arithmetic(e) for e in ops.walk_expr(test.operands[1]))
        ):
            return bound, body
        limit = self.text.expr(test.operands[1])
        if test.ops[0] in ("<=", "=="):  # lid == u: instances 0..u, one active
            limit = f"({limit}) + 1"
        if test.ops[0] != "==":
            # Every instance the loop visits passes ``lid < u``: ``u`` reads only names and
            # queries, which hold their phase-start values in every instance (uniform locals
            # the phase assigns are reset per instance), so it is the value the bound was
            # computed from. Without the test the loop body is straight-line code LLVM
            # vectorizes.
            body = (*body[:lead], *rest[0].body)
        return f"max(0, min({bound}, {limit}))", body

    def _remat_closure(self, names: set[str]) -> list[str]:
        """``names`` and the recomputed locals they read, in definition order."""
        remat = self.phases.remat
        todo, found = list(names), set()
        while todo:
            n = todo.pop()
            if n not in found:
                found.add(n)
                todo += [
                    e.name
                    for e in ops.walk_expr(remat[n].value)
                    if isinstance(e, ops.Var) and e.name in remat
                ]
        order = {id(s): k for k, s in enumerate(ops.walk_stmts(self.ir.body))}
        return sorted(found, key=lambda n: order[id(remat[n])])


def _offsets(block: ops.Block) -> bool:
    """Whether ``block`` adds or subtracts a constant (``a[lid + 2]``, ``i = lid - 1``): what
    narrowing the x id is for (narrow.py: ``lid + 2`` provably cannot wrap). Elsewhere it
    costs: on the block reduction the narrowed id made the copy ``shared[lid] = data[bid *
    block + lid]`` 1.3-1.4x slower per block than the plain loop index (the index's
    wrap-around check stays either way: ``bid * block`` may be negative)."""
    for stmt in ops.walk_stmts(block):
        for e in (x for top in ops.stmt_exprs(stmt) for x in ops.walk_expr(top)):
            if (
                isinstance(e, ops.Binary)
                and e.op in "+-"
                and any(isinstance(o, ops.Const) for o in (e.left, e.right))
            ):
                return True
    return False


def _arithmetic(e: ops.Expr) -> bool:
    """Names, constants, context reads and arithmetic only: nothing that reads memory or calls."""
    return isinstance(e, (ops.Var, ops.Const, ops.Unary, ops.Binary, ops.Cast, ops.CtxRead))


def _recomputes(stmt: ops.Stmt, remat: dict[str, ops.Assign]) -> bool:
    return isinstance(stmt, ops.Assign) and stmt.target.name in remat


def _returns(block: ops.Block) -> bool:
    return any(isinstance(s, ops.Return) for s in ops.walk_stmts(block))


def _assigned(block: ops.Block, deep: bool = True) -> set[str]:
    """The variables ``block``'s statements assign (with their nested statements: ``deep``)."""
    stmts = ops.walk_stmts(block) if deep else iter(block)
    found = set()
    for s in stmts:
        if isinstance(s, ops.Assign):
            found.add(s.target.name)
        elif isinstance(s, ops.For):
            found.add(s.var.name)
    return found

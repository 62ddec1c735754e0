"""The HPVM dataflow-graph IR: types, size expressions, graphs, the verifier.

Every name below is loaded on first use (PEP 562's module ``__getattr__``, ``lazy.py``):
importing one module of the IR (``hpvm.ir.host``, ``hpvm.ir.pictures``) does not load the
others, NumPy or lark, so ``import hpvm`` stays cheap.
"""

from .lazy import lazy_attributes

__all__ = [
    "ALL_TO_ALL",
    "Array",
    "Layout",
    "LoadedProgram",
    "load_program",
    "parse_layout",
    "parse_program",
    "print_program",
    "save_program",
    "ArrayType",
    "BinOp",
    "CPU_TARGET",
    "Call",
    "ChildGraph",
    "Const",
    "Edge",
    "Expr",
    "GPU_TARGET",
    "InputBind",
    "InternalFunction",
    "LeafFunction",
    "Node",
    "NodeFunction",
    "NodeHandleType",
    "ONE_TO_ONE",
    "OutputBind",
    "Param",
    "ParamExpr",
    "PortType",
    "ScalarType",
    "Shape",
    "TENSOR_TARGET",
    "functions",
    "parse_type",
    "port_type",
    "size_max",
    "size_min",
    "topological_order",
    "verify",
]


# name → the submodule that defines it
_LAZY = {
    "Array": "types",
    "ArrayType": "types",
    "NodeHandleType": "types",
    "PortType": "types",
    "ScalarType": "types",
    "parse_type": "types",
    "port_type": "types",
    "BinOp": "expr",
    "Call": "expr",
    "Const": "expr",
    "Expr": "expr",
    "ParamExpr": "expr:Param",  # the size expression's parameter (``Param`` is the graph's)
    "Shape": "expr",
    "size_max": "expr",
    "size_min": "expr",
    "ALL_TO_ALL": "graph",
    "CPU_TARGET": "graph",
    "GPU_TARGET": "graph",
    "ONE_TO_ONE": "graph",
    "TENSOR_TARGET": "graph",
    "ChildGraph": "graph",
    "Edge": "graph",
    "InputBind": "graph",
    "InternalFunction": "graph",
    "LeafFunction": "graph",
    "Node": "graph",
    "NodeFunction": "graph",
    "OutputBind": "graph",
    "Param": "graph",
    "functions": "graph",
    "Layout": "layouts",
    "print_program": "printer",
    "topological_order": "verify",
    "verify": "verify",
    # the text form's parser (and saved programs, which use it) load lark
    "parse_layout": "parser",
    "parse_program": "parser",
    "LoadedProgram": "program_file",
    "load_program": "program_file",
    "save_program": "program_file",
}


__getattr__ = lazy_attributes(__name__, _LAZY)

"""The HPVM dataflow-graph IR: types, size expressions, graphs, the verifier."""

from .expr import BinOp, Call, Const, Expr, Shape, size_max, size_min
from .expr import Param as ParamExpr
from .graph import (
    ALL_TO_ALL,
    CPU_TARGET,
    GPU_TARGET,
    ONE_TO_ONE,
    TENSOR_TARGET,
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    NodeFunction,
    OutputBind,
    Param,
    functions,
)
from .layouts import Layout
from .lazy import lazy_attributes
from .printer import print_program
from .types import Array, ArrayType, NodeHandleType, PortType, ScalarType, parse_type, port_type
from .verify import topological_order, verify

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


# The text form's parser (and saved programs, which use it) load lark: imported when first
# used, so that ``import hpvm`` stays light.
_LAZY = {
    "parse_layout": "parser",
    "parse_program": "parser",
    "LoadedProgram": "program_file",
    "load_program": "program_file",
    "save_program": "program_file",
}


__getattr__ = lazy_attributes(__name__, _LAZY)

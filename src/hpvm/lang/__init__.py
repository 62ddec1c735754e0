"""The Python frontend: decorators, builder calls traced in internal nodes, leaf intrinsics."""

from .builder import bind_in, bind_out, create_node, create_node_1d, create_node_2d, create_node_3d, create_node_nd, edge
from .decorators import internal, leaf
from .intrinsics import (
    atomic_add,
    atomic_and,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_sub,
    atomic_xchg,
    atomic_xor,
    barrier,
    get_node,
    get_node_instance_id_x,
    get_node_instance_id_y,
    get_node_instance_id_z,
    get_num_dims,
    get_num_node_instances_x,
    get_num_node_instances_y,
    get_num_node_instances_z,
    get_parent_node,
    malloc,
)

__all__ = [
    "atomic_add", "atomic_and", "atomic_max", "atomic_min", "atomic_or", "atomic_sub",
    "atomic_xchg", "atomic_xor", "barrier", "bind_in", "bind_out", "create_node",
    "create_node_1d", "create_node_2d", "create_node_3d", "create_node_nd", "edge",
    "get_node", "get_node_instance_id_x", "get_node_instance_id_y", "get_node_instance_id_z",
    "get_num_dims", "get_num_node_instances_x", "get_num_node_instances_y",
    "get_num_node_instances_z", "get_parent_node", "internal", "leaf", "malloc",
]

"""What the back ends that compile leaves with a Numba compiler share (``cpu``, ``cuda``).

``atomics``: hpvm's atomics as Numba intrinsics (LLVM atomic instructions on the CPU).
``messages``: Numba's error messages as ``CompileError``s naming the leaf and line.

Not a back end: the back-end packages do not import each other, so what two of them need
lives here. Importing this package imports nothing (``atomics`` imports Numba).
"""

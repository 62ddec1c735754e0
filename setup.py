"""The optional C extension (``hpvm.runtime._replay``, runtime/fastpath.py); everything
else is declared in pyproject.toml. Optional: where it cannot be compiled, hpvm installs
without it, launch plans use their Python replay and streams compare footprints with NumPy
(the same behaviour, slower)."""

import numpy
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "hpvm.runtime._replay",
            ["src/hpvm/runtime/_replay.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)

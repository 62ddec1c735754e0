"""hpvm.h: shipped with the package, declaring the whole HPVM-C API, and both C and C++
compile against it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hpvmc_helpers import needs_clang

from hpvm import c
from hpvm.c import clang

API = (
    "__hpvm__createNodeND __hpvm__edge __hpvm__bindIn __hpvm__bindOut __hpvm__hint __hpvm__attributes "
    "__hpvm__return __hpvm__getNode __hpvm__getParentNode __hpvm__getNodeInstanceID_x "
    "__hpvm__getNodeInstanceID_y __hpvm__getNodeInstanceID_z __hpvm__getNumNodeInstances_x "
    "__hpvm__getNumNodeInstances_y __hpvm__getNumNodeInstances_z __hpvm__malloc __hpvm__barrier "
    "__hpvm__atomic_add __hpvm__atomic_sub __hpvm__atomic_xchg __hpvm__atomic_inc __hpvm__atomic_dec "
    "__hpvm__atomic_min __hpvm__atomic_max __hpvm__atomic_and __hpvm__atomic_or __hpvm__atomic_xor "
    "__hpvm__init __hpvm__cleanup llvm_hpvm_track_mem llvm_hpvm_untrack_mem llvm_hpvm_request_mem "
    "__hpvm__launch __hpvm__wait __hpvm__push __hpvm__pop __hpvm__tensor_convolution "
    "__hpvm__tensor_group_convolution __hpvm__tensor_batchnorm __hpvm__tensor_add __hpvm__tensor_mul "
    "__hpvm__tensor_relu __hpvm__tensor_clipped_relu __hpvm__tensor_tanh __hpvm__tensor_sigmoid "
    "__hpvm__tensor_softmax __hpvm__tensor_pool_max __hpvm__tensor_pool_mean __hpvm__tensor_pool_min"
).split()

USES = """
#include "hpvm.h"
void use(void *n, int *p) {
  __hpvm__hint(%(cpu)s);
  __hpvm__hint(%(gpu)s);
  __hpvm__hint(%(tensor)s);
  (void)__hpvm__getNumNodeInstances_z(n);
  (void)__hpvm__atomic_xor(p, 3);
  (void)__hpvm__tensor_pool_max(n, 2, 2, 0, 0, 2, 2);
  llvm_hpvm_track_mem(p, 4);
}
"""


def test_the_header_is_package_data():
    header = Path(c.include_dir()) / "hpvm.h"
    assert header.is_file()
    text = header.read_text()
    for name in API:
        assert re.search(rf"\b{name}\(", text), f"{name} is not declared"
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"c/include/*.h"' in pyproject


@needs_clang
def test_c_compiles_against_it(tmp_path):
    path = tmp_path / "use.c"
    path.write_text(USES % {"cpu": "CPU_TARGET", "gpu": "GPU_TARGET", "tensor": "TENSOR_TARGET"})
    text = clang.to_llvm(path)
    assert "@__hpvm__atomic_xor(" in text and "call void @__hpvm__hint(i32 noundef 4)" in text


@needs_clang
def test_cpp_compiles_against_it_with_unmangled_api(tmp_path):
    path = tmp_path / "use.cpp"
    path.write_text(
        USES % {"cpu": "hpvm::CPU_TARGET", "gpu": "hpvm::GPU_TARGET", "tensor": "hpvm::TENSOR_TARGET"}
    )
    text = clang.to_llvm(path)
    assert "@__hpvm__getNumNodeInstances_z(" in text  # extern "C": not mangled
    assert "@_Z3usePvPi(" in text  # the program's own function is C++


@needs_clang
@pytest.mark.parametrize(
    ("defines", "target"),
    [((), 2), (("DEVICE=CPU_TARGET",), 1)],  # GPU_TARGET by default; HPVM's build passes -DDEVICE=...
)
def test_cpp_spells_the_device_hint_both_ways(tmp_path, defines, target):
    # HPVM's C++ benchmarks (parboil's stencil) write hpvm::DEVICE, others DEVICE alone
    path = tmp_path / "hint.cc"
    path.write_text(
        '#include "hpvm.h"\n'
        "void qualified() { __hpvm__hint(hpvm::DEVICE); }\n"
        "#ifndef DEVICE_IS_ENUMERATOR\n"
        "void bare() { __hpvm__hint(DEVICE); }\n"
        "#endif\n"
    )
    flags = ["-DDEVICE_IS_ENUMERATOR"] if defines else []  # with HPVM's own -D only hpvm::DEVICE names it
    text = clang.to_llvm(path, defines=defines, flags=flags)
    hints = re.findall(r"call void @__hpvm__hint\(i32 noundef (\d+)\)", text)
    assert hints == [str(target)] * (1 if defines else 2)


@needs_clang
def test_asserts_stay_on(tmp_path):
    path = tmp_path / "a.c"
    path.write_text("#include <assert.h>\nint main(int argc, char **argv) { assert(argc == 7); return 0; }\n")
    assert "__assert_fail" in clang.to_llvm(path)


def test_hpvm_c_is_lazy():
    import subprocess
    import sys

    code = (
        "import sys, hpvm; assert 'hpvm.c' not in sys.modules; hpvm.c.compile; assert 'hpvm.c' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_ziglang_compile_says_so(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ziglang" else real(name, *a)
    )
    assert "ziglang package is not installed" in c.unavailable_reason()
    path = tmp_path / "p.c"
    path.write_text("int main(void) { return 0; }\n")
    with pytest.raises(
        c.HPVMCError, match=r"cannot compile HPVM-C here: the ziglang package is not installed"
    ):
        c.compile(path)

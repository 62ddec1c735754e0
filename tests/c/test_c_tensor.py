"""HPVM-C tensor programs: ``__hpvm__tensor_*`` leaves become tensor leaves, their ``void *``
ports tensors, and host code makes tensors with tensor_runtime.h. The example checks itself
against C loops; here its result is checked against NumPy from the same weight files, on
``tensor`` (PyTorch) and ``interp``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import EXAMPLES, line_of, needs_clang, write_tensor_files

import hpvm
from hpvm import c
from hpvm.ir.bodies import TensorBody
from hpvm.ir.types import ArrayType, ScalarType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails, needs_backend  # noqa: E402

pytestmark = [needs_clang, pytest.mark.usefixtures("clean_runtime")]
TENSOR = ArrayType(ScalarType("f32"), 4)
MATRIX = ArrayType(ScalarType("f32"), 2)
CHANNELS = ArrayType(ScalarType("f32"), 1)
TARGETS = ["interp", pytest.param("tensor", marks=needs_backend("tensor"))]


def _weights(folder: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    arrays = {
        "input": rng.standard_normal((2, 3, 8, 8)),
        "conv2d_1_w": rng.standard_normal((4, 3, 3, 3)),
        "conv2d_1_b": rng.standard_normal((1, 4, 1, 1)),
        "dense_1_w": rng.standard_normal((1, 1, 64, 10)) / 4,
        "dense_1_b": rng.standard_normal((1, 10, 1, 1)),
    }
    return write_tensor_files(folder, arrays)


def _numpy_pipeline(a: dict[str, np.ndarray]) -> np.ndarray:
    """conv (pad 1, stride 1) → + bias → relu → 2x2 max pool → dense → + bias → softmax,
    in float64, as HPVM lays out the tensors: dense weights (1, 1, K, M), biases (1, C, 1, 1);
    the result (N, M, 1, 1)."""
    x, w, b = a["input"], a["conv2d_1_w"], a["conv2d_1_b"]
    n, ch, h, wd = x.shape
    k, _, r, _ = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, k, h, wd))
    for u in range(r):
        for v in range(r):
            out += np.einsum("nchw,kc->nkhw", xp[:, :, u : u + h, v : v + wd], w[:, :, u, v])
    out = np.maximum(out + b, 0.0)
    pooled = out.reshape(n, k, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
    z = pooled.reshape(n, -1) @ a["dense_1_w"][0, 0] + a["dense_1_b"].reshape(1, -1)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(n, -1, 1, 1)


def test_the_example_builds_a_graph_of_tensor_leaves():
    program = c.compile(EXAMPLES / "tensor_pipeline.c")
    (root,) = program.roots
    # HPVM's (1, 1, K, M) dense weights are mul's (K, M); its (1, M, 1, 1) bias, added to
    # the (N, M) product, is (M,)
    assert [p.type for p in root.params] == [TENSOR, TENSOR, TENSOR, MATRIX, CHANNELS]
    assert root.out_types == [MATRIX]
    ops = []
    for node in root.graph.nodes:
        leaf = node.function
        assert isinstance(leaf.body, TensorBody) and leaf.hint == "tensor"
        ops += [call.op for call in leaf.body.calls]
    assert ops == ["convolution", "add", "relu", "pool_max", "mul", "add", "softmax"]


@pytest.mark.parametrize("target", [None, *TARGETS])
def test_the_example_runs_and_checks_itself(target, capfd):
    assert c.compile(EXAMPLES / "tensor_pipeline.c").run(target=target) == 0
    assert "tensor_pipeline: 20 outputs, 0 wrong" in capfd.readouterr().out


@pytest.mark.parametrize("target", TARGETS)
def test_the_example_reads_weights_and_matches_numpy(target, tmp_path, capfd):
    arrays = _weights(tmp_path)
    out = tmp_path / "out.bin"
    assert c.compile(EXAMPLES / "tensor_pipeline.c").run([str(tmp_path), str(out)], target=target) == 0
    assert "0 wrong" in capfd.readouterr().out
    got = np.fromfile(out, dtype=np.float32).reshape(2, 10, 1, 1)
    want = _numpy_pipeline(arrays)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_tensor_result_is_a_struct_tensor(write_c, capfd):
    """The fields of struct Tensor C reads: dims, num_elems, size_in_bytes, host_data."""
    source = """#include <stdio.h>
#include "hpvm.h"
#include "tensor_runtime.h"
void leaf(void *t, size_t n) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t, 0);
  void *r = __hpvm__tensor_clipped_relu(t);
  __hpvm__return(2, r, (size_t)0);
}
void root(void *t, size_t n) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindOut(l, 0, 0, 0); __hpvm__bindOut(l, 1, 1, 0);
}
struct ret_t { void *tensor; size_t bytes; };
typedef struct __attribute__((__packed__)) { void *t; size_t n; struct ret_t r; } RootIn;
int main(void) {
  __hpvm__init();
  struct Tensor *t = create4DTensor(float_type, nchw, 1, 2, 1, 5);
  float v[10] = {-3, -1, 0, 1, 2, 5, 6, 7, 9, 100};
  initTensorData(t, v, sizeof v);
  RootIn args = {t, 0};
  void *g = __hpvm__launch(0, root, &args);
  __hpvm__wait(g);
  struct Tensor *r = args.r.tensor;
  hpvm_request_tensor(r, 0);
  printf("dims %d: %zu %zu %zu %zu; %zu elems, %zu bytes, out.bytes %zu\\n", r->dims.num_dims,
         r->dims.dim_sizes[0], r->dims.dim_sizes[1], r->dims.dim_sizes[2], r->dims.dim_sizes[3],
         r->num_elems, r->size_in_bytes, args.r.bytes);
  for (int i = 0; i < 10; i++) printf("%g ", ((float *)r->host_data)[i]);
  freeTensor(t);
  __hpvm__cleanup();
  return 0;
}
"""
    assert c.compile(write_c(source)).run(target="interp") == 0
    out = capfd.readouterr().out
    assert "dims 4: 1 2 1 5; 10 elems, 40 bytes, out.bytes 40" in out
    assert out.split("\n")[1].split() == ["0", "0", "0", "1", "2", "5", "6", "6", "6", "6"]


MANY = """#include <stdio.h>
#include "hpvm.h"
#include "tensor_runtime.h"
void layer(void *x, size_t bx, void *w, size_t bw, void *g, size_t bg, void *be, size_t bbe,
           void *m, size_t bm, void *v, size_t bv) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(6, x, w, g, be, m, v, 0);
  void *c = __hpvm__tensor_group_convolution(x, w, 1, 1, 1, 1, 1, 2);
  void *n = __hpvm__tensor_batchnorm(c, g, be, m, v, 0.001);
  void *a = __hpvm__tensor_tanh(n);
  void *p = __hpvm__tensor_pool_mean(a, 2, 2, 0, 0, 2, 2);
  void *s = __hpvm__tensor_sigmoid(p);
  __hpvm__return(2, s, (size_t)0);
}
void root(void *x, size_t bx, void *w, size_t bw, void *g, size_t bg, void *be, size_t bbe,
          void *m, size_t bm, void *v, size_t bv) {
  void *l = __hpvm__createNodeND(0, layer);
  for (int i = 0; i < 12; i++) __hpvm__bindIn(l, i, i, 0);
  __hpvm__bindOut(l, 0, 0, 0);
  __hpvm__bindOut(l, 1, 1, 0);
}
struct ret_t { void *tensor; size_t bytes; };
typedef struct __attribute__((__packed__)) {
  void *x; size_t bx; void *w; size_t bw; void *g; size_t bg; void *be; size_t bbe;
  void *m; size_t bm; void *v; size_t bv; struct ret_t r;
} RootIn;
static void *load(const char *dir, const char *name, long n, long c, long h, long w) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  return readTrainedWeights(path, float_type, n, c, h, w);
}
int main(int argc, char **argv) {
  RootIn args = {load(argv[1], "x", 1, 4, 6, 6), 0, load(argv[1], "w", 4, 2, 3, 3), 0,
                 load(argv[1], "g", 1, 4, 1, 1), 0, load(argv[1], "be", 1, 4, 1, 1), 0,
                 load(argv[1], "m", 1, 4, 1, 1), 0, load(argv[1], "v", 1, 4, 1, 1), 0};
  __hpvm__init();
  void *g = __hpvm__launch(0, root, &args);
  __hpvm__wait(g);
  struct Tensor *r = args.r.tensor;
  hpvm_request_tensor(r, 0);
  FILE *f = fopen(argv[2], "wb");
  fwrite(r->host_data, sizeof(float), r->num_elems, f);
  fclose(f);
  __hpvm__cleanup();
  return r->num_elems != 36;
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_several_operations_in_one_leaf(target, write_c, tmp_path):
    """group convolution (conv_mode 1 dropped), batchnorm, tanh, pool_mean, sigmoid: the
    graph from C computes what the same operations compute in NumPy."""
    from hpvm.ir.tensorops import OPS

    program = c.compile(write_c(MANY))
    (leaf,) = [n.function for n in program.roots[0].graph.nodes]
    assert [call.op for call in leaf.body.calls] == [
        "group_convolution", "batchnorm", "tanh", "pool_mean", "sigmoid"
    ]  # fmt: skip
    assert [p.type for p in leaf.params] == [TENSOR, TENSOR] + [ArrayType(ScalarType("f32"), 1)] * 4
    rng = np.random.default_rng(3)
    arrays = {
        "x": rng.standard_normal((1, 4, 6, 6)),
        "w": rng.standard_normal((4, 2, 3, 3)),
        **{k: rng.standard_normal((1, 4, 1, 1)) for k in ("g", "be", "m")},
        "v": rng.uniform(0.5, 2.0, (1, 4, 1, 1)),
    }
    arrays = write_tensor_files(tmp_path, arrays)
    x, w, g, be, m, v = (arrays[k] for k in ("x", "w", "g", "be", "m", "v"))
    g, be, m, v = (a.reshape(4) for a in (g, be, m, v))
    ref = OPS["group_convolution"].numpy(x, w, 1, 1, 1, 1, 2)
    ref = OPS["batchnorm"].numpy(ref, g, be, m, v, 0.001)
    ref = OPS["sigmoid"].numpy(OPS["pool_mean"].numpy(np.tanh(ref), 2, 2, 0, 0, 2, 2))
    # from C: (1, 4, 1, 1) tensors read by readTrainedWeights, passed as batchnorm's (4,)
    out = tmp_path / "out.bin"
    assert program.run([str(tmp_path), str(out)], target=target) == 0
    got = np.fromfile(out, np.float32).reshape(ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    # from Python: the same graph takes (C,) arrays for those ports
    hpvm.init()
    for a in (x, w, g, be, m, v):
        hpvm.track_memory(a)
    (got,) = hpvm.wait(hpvm.launch(program.roots[0], (x, w, g, be, m, v), target=target))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-5)


# -- errors ---------------------------------------------------------------------------------

ONE_LEAF = """#include "hpvm.h"
#include "tensor_runtime.h"
void leaf(void *t, size_t n) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t, 0);
  BODY
  __hpvm__return(2, r, (size_t)0);
}
void root(void *t, size_t n) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindOut(l, 0, 0, 0); __hpvm__bindOut(l, 1, 1, 0);
}
"""


def test_a_tensor_leaf_that_also_computes(write_c):
    source = ONE_LEAF.replace(
        "BODY", "((float *)t)[0] += 1.0f;  // @add\n  void *r = __hpvm__tensor_relu(t);"
    )
    path = write_c(source)
    with fails(c.HPVMCError, f"{path}:{line_of(source, 'add')}:", "holds only those calls"):
        c.compile(path)


def test_group_convolution_mode_must_be_cross_correlation(write_c):
    source = ONE_LEAF.replace(
        "BODY", "void *r = __hpvm__tensor_group_convolution(t, t, 0, 0, 1, 1, 0, 1);  // @conv"
    )
    path = write_c(source)
    with fails(c.HPVMCError, f"{path}:{line_of(source, 'conv')}", "conv_mode 0", "cross-correlation"):
        c.compile(path)


def test_a_tensor_edge_into_a_cpu_leaf(write_c):
    source = """#include "hpvm.h"
void t_leaf(void *t, size_t n) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t, 0);
  void *r = __hpvm__tensor_relu(t);
  __hpvm__return(2, r, (size_t)0);
}
void c_leaf(float *a, size_t n) {
  __hpvm__attributes(1, a, 0);
  a[0] = 1.0f;
  __hpvm__return(1, n);
}
void root(void *t, size_t n) {
  void *x = __hpvm__createNodeND(0, t_leaf);
  void *y = __hpvm__createNodeND(0, c_leaf);
  __hpvm__bindIn(x, 0, 0, 0); __hpvm__bindIn(x, 1, 1, 0);
  __hpvm__edge(x, y, 1, 0, 0, 0);  // @edge
  __hpvm__edge(x, y, 1, 1, 1, 0);
  __hpvm__bindOut(y, 0, 0, 0);
}
"""
    path = write_c(source)
    with fails(c.HPVMCError, f"{path}:{line_of(source, 'edge')}", "joins a tensor and plain memory"):
        c.compile(path)


def test_launch_with_a_pointer_that_is_not_a_tensor(write_c):
    source = (
        ONE_LEAF.replace("BODY", "void *r = __hpvm__tensor_relu(t);")
        + """
#include <stdlib.h>
typedef struct __attribute__((__packed__)) { void *t; size_t n; void *r; size_t rn; } RootIn;
int main(void) {
  __hpvm__init();
  float *plain = malloc(64);
  RootIn args = {plain, 64};
  __hpvm__wait(__hpvm__launch(0, root, &args));
  return 0;
}
"""
    )
    program = c.compile(write_c(source))
    with fails(c.HPVMCError, "__hpvm__launch", "is not a tensor of the tensor runtime", "create4DTensor"):
        program.run(target="interp")


def test_read_trained_weights_of_a_short_file(write_c, tmp_path):
    np.zeros(5, np.float32).tofile(tmp_path / "w.bin")
    source = f"""#include "hpvm.h"
#include "tensor_runtime.h"
void root(void) {{ }}
int main(void) {{
  void *w = readTrainedWeights("{tmp_path / "w.bin"}", 0, 1, 1, 2, 3);
  return w == 0;
}}
"""
    source = source.replace(
        "void root(void) { }", ONE_LEAF.replace("BODY", "void *r = __hpvm__tensor_relu(t);")
    )
    program = c.compile(write_c(source))
    with fails(c.HPVMCError, "readTrainedWeights", "holds 5 float32 values, 6 are needed"):
        program.run(target="interp")


def test_cpu_target_with_tensor_leaves():
    program = c.compile(EXAMPLES / "tensor_pipeline.c")
    with fails(c.HPVMCError, "target 'cpu'", "tensor operations", "'interp'"):
        program.run(target="cpu")


TWO_LEAVES = """#include "hpvm.h"
#include "tensor_runtime.h"
void fc(void *x, size_t bx, void *w, size_t bw) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(2, x, w, 0);
  void *r = __hpvm__tensor_mul(x, w);
  __hpvm__return(2, r, (size_t)0);
}
void next(void *x, size_t bx, void *w, size_t bw) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(2, x, w, 0);
  void *r = NEXT;
  __hpvm__return(2, r, (size_t)0);
}
void root(void *x, size_t bx, void *w, size_t bw, void *w2, size_t bw2) {
  void *a = __hpvm__createNodeND(0, fc);
  __hpvm__bindIn(a, 0, 0, 0); __hpvm__bindIn(a, 1, 1, 0); __hpvm__bindIn(a, 2, 2, 0); __hpvm__bindIn(a, 3, 3, 0);
  void *b = __hpvm__createNodeND(0, next);
  __hpvm__edge(a, b, 1, 0, 0, 0); __hpvm__edge(a, b, 1, 1, 1, 0);
  __hpvm__bindIn(b, W2, 2, 0); __hpvm__bindIn(b, W2 + 1, 3, 0);  // @bind
  __hpvm__bindOut(b, 0, 0, 0); __hpvm__bindOut(b, 1, 1, 0);
}
"""


def test_a_convolution_of_a_mul_result(write_c):
    source = TWO_LEAVES.replace("NEXT", "__hpvm__tensor_convolution(x, w, 0, 0, 1, 1)").replace("W2", "4")
    path = write_c(source)
    with fails(
        c.HPVMCError, f"{path}:", "next passes a 2-D (K, M) matrix where convolution takes a 4-D tensor"
    ):
        c.compile(path)


def test_one_tensor_as_mul_weights_and_as_a_filter(write_c):
    source = TWO_LEAVES.replace("NEXT", "__hpvm__tensor_add(x, w)").replace("W2", "2")
    path = write_c(source)  # (w: fc's (K, M) weights, and the bias added to its (N, M) result)
    with fails(c.HPVMCError, f"{path}:{line_of(source, 'bind')}", "used both as", "pass two tensors"):
        c.compile(path)


def test_mul_weights_of_the_wrong_shape(write_c):
    source = (
        TWO_LEAVES.replace("NEXT", "__hpvm__tensor_add(x, w)").replace("W2", "4")
        + """
typedef struct __attribute__((__packed__)) {
  void *x; size_t bx; void *w; size_t bw; void *w2; size_t bw2; void *r; size_t rn;
} RootIn;
int main(void) {
  __hpvm__init();
  RootIn args = {create4DTensor(0, 0, 2, 3, 1, 1), 0, create4DTensor(0, 0, 1, 3, 3, 5), 0,
                 create4DTensor(0, 0, 1, 5, 1, 1), 0};
  __hpvm__wait(__hpvm__launch(0, root, &args));
  return 0;
}
"""
    )
    program = c.compile(write_c(source))
    with fails(c.HPVMCError, "(1, 3, 3, 5)", "weights of __hpvm__tensor_mul", "(1, 1, K, M)"):
        program.run(target="interp")


def test_without_pytorch_tensor_graphs_run_on_interp(monkeypatch, capfd):
    from hpvm.c import targets

    program = c.compile(EXAMPLES / "tensor_pipeline.c")
    monkeypatch.setattr(targets, "has_torch", lambda: False)
    assert targets.choose_target(program.path, program.roots, program.hints(), None) == "interp"
    assert "PyTorch is not installed" in capfd.readouterr().err
    monkeypatch.setattr(targets, "has_torch", lambda: True)
    assert targets.choose_target(program.path, program.roots, program.hints(), None) == "tensor"


MIXED = """#include <stdio.h>
#include "hpvm.h"
#include "tensor_runtime.h"
void t_leaf(void *t, size_t n) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t, 0);
  void *r = __hpvm__tensor_relu(t);
  __hpvm__return(2, r, (size_t)0);
}
void c_leaf(float *a, size_t n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a, 1, a);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  a[i] = 2.0f * a[i];
  __hpvm__return(1, n);
}
void root(void *t, size_t nt, float *a, size_t na) {
  __hpvm__hint(CPU_TARGET);
  void *x = __hpvm__createNodeND(0, t_leaf);
  void *y = __hpvm__createNodeND(1, c_leaf, na / sizeof(float));
  __hpvm__bindIn(x, 0, 0, 0); __hpvm__bindIn(x, 1, 1, 0);
  __hpvm__bindIn(y, 2, 0, 0); __hpvm__bindIn(y, 3, 1, 0);
  __hpvm__bindOut(x, 0, 0, 0); __hpvm__bindOut(x, 1, 1, 0);
}
struct ret_t { void *tensor; size_t bytes; };
typedef struct __attribute__((__packed__)) { void *t; size_t nt; float *a; size_t na; struct ret_t r; } RootIn;
int main(void) {
  __hpvm__init();
  struct Tensor *t = create4DTensor(float_type, nchw, 1, 1, 1, 4);
  float v[4] = {-1, 2, -3, 4}, a[4] = {1, 2, 3, 4};
  initTensorData(t, v, sizeof v);
  llvm_hpvm_track_mem(a, sizeof a);
  RootIn args = {t, 0, a, sizeof a};
  __hpvm__wait(__hpvm__launch(0, root, &args));
  llvm_hpvm_request_mem(a, sizeof a);
  float *r = ((struct Tensor *)args.r.tensor)->host_data;
  printf("%g %g %g %g | %g %g %g %g\\n", r[0], r[1], r[2], r[3], a[0], a[1], a[2], a[3]);
  __hpvm__cleanup();
  return 0;
}
"""


@pytest.mark.parametrize("target", [pytest.param(None, marks=needs_backend("tensor")), "interp"])
def test_tensor_and_llvm_leaves_in_one_graph(write_c, target, capfd):
    """None: the hints split the graph (relu on tensor, the loop on cpu); interp runs both."""
    from hpvm.c.targets import choose_target

    program = c.compile(write_c(MIXED))
    assert choose_target(program.path, program.roots, program.hints(), target) == target
    assert program.run(target=target) == 0
    assert "0 2 0 4 | 2 4 6 8" in capfd.readouterr().out


def test_the_command_line_runs_the_tensor_example(tmp_path, capfd):
    from hpvm.cli import main as cli

    _weights(tmp_path)
    assert (
        cli(["c", "run", str(EXAMPLES / "tensor_pipeline.c"), "--target", "interp", "--", str(tmp_path)]) == 0
    )
    assert "tensor_pipeline: 20 outputs, 0 wrong" in capfd.readouterr().out
    assert cli(["c", "lower", str(EXAMPLES / "tensor_pipeline.c")]) == 0
    assert "dense_1_w: f32[:, :]" in capfd.readouterr().out


STREAM = """#include <stdio.h>
#include "hpvm.h"
#include "tensor_runtime.h"
void leaf(void *t, size_t n) {
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t, 0);
  void *r = __hpvm__tensor_pool_max(t, 1, 2, 0, 0, 1, 2);
  __hpvm__return(2, r, (size_t)0);
}
void root(void *t, size_t n) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 1); __hpvm__bindIn(l, 1, 1, 1);
  __hpvm__bindOut(l, 0, 0, 1); __hpvm__bindOut(l, 1, 1, 1);
}
struct ret_t { void *tensor; size_t bytes; };
typedef struct __attribute__((__packed__)) { void *t; size_t n; struct ret_t r; } RootIn;
int main(void) {
  __hpvm__init();
  void *g = __hpvm__launch(1, root, NULL);
  for (int f = 0; f < 3; f++) {
    struct Tensor *t = create4DTensor(float_type, nchw, 1, 1, 1, 4);
    float v[4] = {f, 10 * f, -f, 5};
    initTensorData(t, v, sizeof v);
    RootIn args = {t, 0};
    __hpvm__push(g, &args);
    struct ret_t *out = __hpvm__pop(g);
    struct Tensor *r = out->tensor;
    printf("frame %d: %g %g (%zu dims)\\n", f, ((float *)r->host_data)[0], ((float *)r->host_data)[1],
           (size_t)r->dims.num_dims);
  }
  __hpvm__wait(g);
  __hpvm__cleanup();
  return 0;
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_streaming_tensor_graph(write_c, target, capfd):
    """push reads tensors through the runtime's registry; pop returns registered results."""
    assert c.compile(write_c(STREAM)).run(target=target) == 0
    out = capfd.readouterr().out
    for f in range(3):
        assert f"frame {f}: {10 * f:g} 5 (4 dims)" in out

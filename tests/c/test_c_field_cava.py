"""CAVA's camera pipeline written as HPVM's hpvm-cava benchmark is (``programs/cava``: the
node functions and the host in main.c, the image files in cam_pipe_utility.c, the camera
model's tables in load_cam_model.c, aligned allocation in utility.c, the macros in defs.h).
What its style has that the other field programs do not: seven stages, each a leaf inside
a 0-D CPU wrapper, chained by the root; every buffer bound from the root while the size of
the image a stage wrote reaches the next stage by an edge from the wrapper's ``bindOut``;
leaves hinted ``DEVICE`` (C's spelling) beside ``CPU_TARGET``; a leaf replicated over the
image's rows beside one that runs once over the whole image and returns nothing; a leaf
calling a helper (the median's sort); GNU statement-expression ``min``/``max`` with
``__typeof__``; a 28-parameter root fed by a packed struct of pointers and byte sizes;
glibc's ``argp`` for the command line.

The test writes a small camera model (its own numbers) and a raw image, runs the program
and checks the result image and the four stage images it writes against the same stages in
NumPy: to the bit when clang's contraction into fused multiply-adds is off (on cpu and
interp); as compiled, the stages without a multiply-add (demosaic, denoise) to the bit and
the others within the rounding the contraction moves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import line_of, needs_clang, needs_llvm_leaves, run_apart

from hpvm import c
from hpvm.ir.graph import ALL_TO_ALL
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "cava"  # (fixed paths: zig's cache finds them)
SOURCES = [FOLDER / name for name in ("main.c", "cam_pipe_utility.c", "load_cam_model.c", "utility.c")]
F = np.float32
NUM_CTRL_PTS = 12  # defs.h
STAGES = ("demosaic", "denoise", "transform", "gamut")  # the stage images main writes


@pytest.fixture(scope="module")
def program():
    """The program as it is: clang contracts a * b + c into fused multiply-adds."""
    return c.compile(SOURCES)


@pytest.fixture(scope="module")
def exact():
    """Each multiply and add rounded on its own, as NumPy's."""
    return c.compile(SOURCES, flags=["-ffp-contract=off"])


# --- the camera model and the raw image ---------------------------------------------------


def camera_model() -> dict[str, np.ndarray]:
    """A small made-up camera: two white balances, twelve control points, a gamma curve."""
    rng = np.random.default_rng(2024)
    transforms = np.array(
        [
            [[1.62, -0.41, -0.21], [-0.28, 1.47, -0.19], [0.04, -0.52, 1.48]],
            [[1.31, -0.22, -0.09], [-0.17, 1.25, -0.08], [0.02, -0.31, 1.29]],
        ],
        dtype=F,
    )
    coefs = np.array([[0.01, -0.02, 0.015], [0.92, 0.03, -0.01], [0.02, 0.95, 0.01], [-0.03, 0.04, 0.9]], F)
    return {
        "transforms": transforms,
        "ctrl_pts": rng.random((NUM_CTRL_PTS, 3)).astype(F),
        "weights": (rng.standard_normal((NUM_CTRL_PTS, 3)) * 0.02).astype(F),
        "coefs": coefs,
        "tone_map": np.repeat(((np.arange(256) / 255.0) ** (1 / 2.2)).astype(F)[:, None], 3, axis=1)
        * np.array([1.0, 0.98, 0.96], F),
    }


def table_text(rows: np.ndarray, comment: str) -> str:
    """Rows of three float32s, printed so that strtof reads back the same floats."""
    return f"# {comment}\n" + "".join(" ".join(f"{float(v):.9g}" for v in row) + "\n" for row in rows)


def write_model(folder: Path, model: dict[str, np.ndarray]) -> Path:
    folder.mkdir()
    (folder / "transform.txt").write_text(
        table_text(model["transforms"].reshape(-1, 3), "one 3x3 block a white balance")
    )
    (folder / "ctrl_points.txt").write_text(table_text(model["ctrl_pts"], "control points"))
    weights_then_coefs = np.concatenate([model["weights"], model["coefs"]])
    (folder / "coefs.txt").write_text(table_text(weights_then_coefs, "weights, then bias and affine rows"))
    (folder / "tone_map.txt").write_text(table_text(model["tone_map"], "response curves"))
    return folder


def image_bytes(image: np.ndarray) -> bytes:
    """cam_pipe_utility.h's image file: rows, columns, channels as ints, then the bytes."""
    return np.array(image.shape, dtype="<i4").tobytes() + image.astype(np.uint8).tobytes()


def read_image(path: Path) -> np.ndarray:
    data = path.read_bytes()
    rows, cols, chans = np.frombuffer(data[:12], dtype="<i4")
    return np.frombuffer(data[12:], dtype=np.uint8).reshape(rows, cols, chans)


def raw_image(rows: int, cols: int, seed: int) -> np.ndarray:
    """A sensor image: smooth colour ramps under noise, each pixel's three bytes as the
    file holds them (demosaicing reads only its Bayer colour)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:rows, 0:cols]
    base = np.stack([40 + 180 * x / cols, 30 + 200 * y / rows, 220 - 150 * (x + y) / (rows + cols)], axis=-1)
    return np.clip(base + rng.normal(0, 25, base.shape), 0, 255).astype(np.uint8)


# --- the reference: the same stages in NumPy, planar float32 images [chan, row, col] ----


def demosaic(s: np.ndarray) -> np.ndarray:
    """Bilinear GRBG demosaicing with reflected borders (np.pad's 'reflect' is main.c's
    reflect: -1 is 1, n is n - 2), each sum in the program's order."""
    rows, cols = s.shape[1:]
    p = np.pad(s, ((0, 0), (1, 1), (1, 1)), mode="reflect")
    up, down, left, right = p[:, :-2, 1:-1], p[:, 2:, 1:-1], p[:, 1:-1, :-2], p[:, 1:-1, 2:]
    ul, ur, dl, dr = p[:, :-2, :-2], p[:, :-2, 2:], p[:, 2:, :-2], p[:, 2:, 2:]
    two, four = F(2), F(4)
    cross = (up + down + left + right) / four
    diagonal = (ul + ur + dl + dr) / four
    even_row = (np.arange(rows) % 2 == 0)[:, None]
    even_col = (np.arange(cols) % 2 == 0)[None, :]
    green_r, red = even_row & even_col, even_row & ~even_col
    blue, green_b = ~even_row & even_col, ~even_row & ~even_col
    r = np.select(
        [green_r, red, blue, green_b],
        [(left[0] + right[0]) / two, s[0], diagonal[0], (up[0] + down[0]) / two],
    )
    g = np.select([green_r | green_b, red | blue], [s[1], cross[1]])
    b = np.select(
        [green_r, red, blue, green_b],
        [(up[2] + down[2]) / two, diagonal[2], s[2], (left[2] + right[2]) / two],
    )
    return np.stack([r, g, b]).astype(F)


def denoise(d: np.ndarray) -> np.ndarray:
    """The 3x3 median inside the border; the border copied."""
    windows = np.lib.stride_tricks.sliding_window_view(d, (3, 3), axis=(1, 2))
    out = d.copy()
    out[:, 1:-1, 1:-1] = np.sort(windows.reshape(*windows.shape[:3], 9), axis=-1)[..., 4]
    return out


def transform(d: np.ndarray, ts_tw: np.ndarray) -> np.ndarray:
    out = np.stack([(d[0] * ts_tw[ch, 0] + d[1] * ts_tw[ch, 1]) + d[2] * ts_tw[ch, 2] for ch in range(3)])
    return np.where(out > 0, out, F(0)).astype(F)


def gamut_map(t: np.ndarray, model: dict[str, np.ndarray]) -> np.ndarray:
    acc = np.zeros_like(t)
    for cp, w in zip(model["ctrl_pts"], model["weights"], strict=True):
        d = [t[k] - cp[k] for k in range(3)]
        dist = np.sqrt((d[0] * d[0] + d[1] * d[1]) + d[2] * d[2])
        acc = acc + dist[None] * w[:, None, None]
    c = model["coefs"]
    affine = np.stack([((c[0, ch] + c[1, ch] * t[0]) + c[2, ch] * t[1]) + c[3, ch] * t[2] for ch in range(3)])
    out = acc + affine
    return np.where(out > 0, out, F(0)).astype(F)


def to_byte(v: np.ndarray) -> np.ndarray:
    """C's min(max(v * 255, 0), 255) stored in a uint8_t: truncation toward zero."""
    return np.trunc(np.clip(v * F(255), F(0), F(255))).astype(np.uint8)


def tone_map(g: np.ndarray, table: np.ndarray) -> np.ndarray:
    index = np.trunc(np.minimum(g * F(255), F(255))).astype(np.intp)
    return np.stack([table[index[ch], ch] for ch in range(3)]).astype(F)


def reference(raw: np.ndarray, model: dict[str, np.ndarray], wb: int) -> dict[str, np.ndarray]:
    """The result and the stage images main writes, each (row, col, chan) bytes."""
    scaled = raw.transpose(2, 0, 1).astype(F) / F(255)
    stages = {"demosaic": demosaic(scaled)}
    stages["denoise"] = denoise(stages["demosaic"])
    stages["transform"] = transform(stages["denoise"], model["transforms"][wb - 1])
    stages["gamut"] = gamut_map(stages["transform"], model)
    stages[""] = tone_map(stages["gamut"], model["tone_map"])
    return {name: to_byte(image).transpose(1, 2, 0) for name, image in stages.items()}


# --- running -------------------------------------------------------------------------------


def run(program, tmp_path, capfd, target, shape, seed, wb=1):
    """Run the program on a raw image of ``shape`` and return what it wrote and NumPy's."""
    model = camera_model()
    raw = raw_image(*shape, seed)
    model_dir = write_model(tmp_path / "model", model)
    (tmp_path / "raw.bin").write_bytes(image_bytes(raw))
    argv = ["-w", str(wb), str(model_dir), str(tmp_path / "raw.bin"), str(tmp_path / "out")]
    assert program.run(argv, target=target) == 0
    out = capfd.readouterr().out
    assert out == (
        f"cava: {shape[0]} x {shape[1]} raw image, white balance {wb}\n"
        f"cava: wrote {tmp_path / 'out'}.bin and 4 stage images\n"
    ), out
    got = {name: read_image(tmp_path / f"out{'_' + name if name else ''}.bin") for name in ("", *STAGES)}
    want = reference(raw, model, wb)
    assert all(len(np.unique(image)) > 50 for image in want.values())  # no stage flattens the image
    return got, want


def test_the_graph_is_read_as_hpvm_writes_it(program):
    (root,) = program.roots
    assert root.name == "CamPipeRoot"
    wrappers = [n.function for n in root.graph.nodes]
    assert [w.name for w in wrappers] == [
        f"{stage}_fxp_wrapper"
        for stage in ("scale", "demosaic", "denoise", "transform", "gamut_map", "tone_map", "descale")
    ]
    assert all(n.dims == 0 for n in root.graph.nodes)  # each wrapper created once
    leaves = [w.graph.nodes for w in wrappers]
    assert all(len(nodes) == 1 for nodes in leaves)
    leaves = [nodes[0] for nodes in leaves]
    assert [leaf.function.name for leaf in leaves] == [w.name.removesuffix("_wrapper") for w in wrappers]
    # six stages replicated over the image's rows; descale once over the whole image
    assert [leaf.dims for leaf in leaves] == [1, 1, 1, 1, 1, 1, 0]
    assert all(leaf.sizes[0].name == "row_size" for leaf in leaves[:6])
    # wrappers CPU_TARGET; demosaic, transform and tone map DEVICE (the GPU hint)
    assert {w.hint for w in wrappers} == {"cpu"}
    assert [leaf.function.hint for leaf in leaves] == ["cpu", "gpu", "cpu", "gpu", "cpu", "gpu", "cpu"]
    # each stage's size edge: wrapper output 0 -> the next wrapper's bytes_input, all-to-all
    edges = [(e.src.function.name, e.dst.function.name, e.repl) for e in root.graph.edges]
    assert edges == [(a.name, b.name, ALL_TO_ALL) for a, b in zip(wrappers, wrappers[1:])]


@pytest.mark.parametrize(
    ("target", "shape", "wb"), [("cpu", (20, 26), 1), ("cpu", (15, 9), 2), ("interp", (6, 8), 2)]
)
def test_without_contraction_every_image_is_numpys_to_the_bit(exact, tmp_path, capfd, target, shape, wb):
    got, want = run(exact, tmp_path, capfd, target, shape, seed=sum(shape), wb=wb)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"image {name or 'result'!r}")


def test_as_compiled_the_images_are_numpys_within_the_contractions_rounding(program, tmp_path, capfd):
    """Demosaic and denoise have no multiply-add: to the bit. The transform and the gamut
    map fuse some (one rounding moved: a byte at most, where a value sits on a byte's
    edge); the result can take the tone curve's neighbouring entry there. (On interp: the
    leaves' LLVM is the same on cpu, whose cold compile of seven stages the exact build's
    tests already pay.)"""
    got, want = run(program, tmp_path, capfd, "interp", (10, 12), seed=5)
    for name in ("demosaic", "denoise"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    for name in ("transform", "gamut"):
        np.testing.assert_allclose(got[name], want[name], atol=1, rtol=0, err_msg=name)
    curve = to_byte(camera_model()["tone_map"].T).astype(int)
    step = int(np.abs(np.diff(curve, axis=1)).max())
    np.testing.assert_allclose(got[""].astype(int), want[""], atol=step, rtol=0)
    assert (got[""] == want[""]).mean() > 0.95


USAGE_HINT = "Try `"


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["MODEL", "RAW"], "need 3 arguments, got 2"),
        (["MODEL", "RAW", "OUT", "MORE"], "too many arguments"),
        (["-w", "0", "MODEL", "RAW", "OUT"], "the white balance must be a number from 1: '0'"),
    ],
)
def test_bad_command_lines_are_refused(exact, tmp_path, capfd, argv, why):
    assert exact.run(argv, target="cpu") == 1
    err = capfd.readouterr().err
    assert f": {why}\n" in err and USAGE_HINT in err, err


def test_bad_camera_models_are_refused(exact, tmp_path, capfd):
    model_dir = write_model(tmp_path / "model", camera_model())
    (tmp_path / "raw.bin").write_bytes(image_bytes(raw_image(4, 4, 1)))
    argv = [str(model_dir), str(tmp_path / "raw.bin"), str(tmp_path / "out")]
    # a third white balance the model does not have
    assert exact.run(["-w", "3", *argv], target="cpu") == 1
    assert (
        capfd.readouterr().err == f"cava: camera model file '{model_dir}/transform.txt' has 6 rows; need 9\n"
    )
    # a row of two numbers
    text = (model_dir / "ctrl_points.txt").read_text().splitlines()
    text[3] = " ".join(text[3].split()[:2])
    (model_dir / "ctrl_points.txt").write_text("\n".join(text) + "\n")
    assert exact.run(argv, target="cpu") == 1
    assert (
        capfd.readouterr().err
        == f"cava: camera model file '{model_dir}/ctrl_points.txt', line 4: not three numbers\n"
    )
    assert not (tmp_path / "out.bin").exists()


def test_a_size_edge_into_an_image_pointer_is_refused_at_its_line():
    """Built with -D DEMOSAIC_SIZE_PORT=0 (main.c's knob), the scale stage's size goes to
    demosaic's image pointer, not its size: an HPVMCError at the edge's line of main.c
    saying which ports it joins, before anything runs."""
    line = line_of((FOLDER / "main.c").read_text(), "size_edge")
    with fails(c.HPVMCError, f"main.c:{line}", "i64", "u8[*]") as info:
        c.compile(SOURCES, defines=["DEMOSAIC_SIZE_PORT=0"])
    print(info.value)


def test_checked_mode_gives_the_same_images(exact, tmp_path, capfd):
    """The cpu back end's checked mode (``cpu.configure(checked=True)``: every load and
    store of a sized array argument compared with its size) changes no result."""
    import hpvm.backends.cpu as cpu

    previous = cpu.configure(checked=True)
    try:
        got, want = run(exact, tmp_path, capfd, "cpu", (15, 9), seed=24, wb=2)
    finally:
        cpu.configure(**previous)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"image {name or 'result'!r}")


def test_a_scale_over_rows_past_the_image_is_an_error_in_checked_mode(tmp_path):
    """The leaves index ``(chan * row_size + row) * col_size + col`` inside loops (their
    accesses are in no block every call runs): the bounds pre-check does not cover them, and the scale stage
    replicated over 3 rows more than the image has wrote past ``result`` (glibc aborted the
    process). Checked, it is an ``OutOfBoundsError`` naming the node, the array and the
    line of ``main.c``. Run in a copy of the program built that way, in a process of its
    own: a write the check missed must fail this test, not corrupt the test process."""
    import shutil

    folder = tmp_path / "cava"
    shutil.copytree(FOLDER, folder)
    main = (folder / "main.c").read_text()
    main = main.replace("createNodeND(1, scale_fxp, row_size)", "createNodeND(1, scale_fxp, row_size + 3)")
    (folder / "main.c").write_text(main)
    model = write_model(tmp_path / "model", camera_model())
    (tmp_path / "raw.bin").write_bytes(image_bytes(raw_image(6, 8, 14)))
    argv = [str(model), str(tmp_path / "raw.bin"), str(tmp_path / "out")]
    sources = [str(folder / p.name) for p in SOURCES]
    script = (
        "import sys, hpvm, hpvm.backends.cpu as cpu\n"
        "from hpvm import c\n"
        "program = c.compile(sys.argv[1:5])\n"
        "cpu.configure(checked=True)\n"
        "try:\n"
        "    program.run(sys.argv[5:], target='cpu')\n"
        "except hpvm.OutOfBoundsError as e:\n"
        "    print('raised:', e)\n"
    )
    out = run_apart(script, *sources, *argv)
    assert "raised: " in out and "leaf 'scale_fxp'" in out, out
    # (the first access past the image reads 'input'; its store to 'output' follows)
    assert "main.c:" in out and ("falls outside 'input'" in out or "falls outside 'output'" in out), out

"""Convolution and dense layers with their weights prepared once: batch-norm folded,
weights laid out the way the library reads them fastest.

``rewrite.fold_layers`` turns a chain ``convolution → [add bias] → [batchnorm] →
[activation] → [pooling]``, or ``mul → [add bias] → [activation]``, whose weights are root
parameters into one ``Prepared`` call. The call derives its weights from the root's arrays
— the batch-norm folded into the convolution (``w' = w·γ/√(σ²+ε)``,
``b' = (b − μ)·γ/√(σ²+ε) + β``); on a CPU with oneDNN the convolution weight reordered into
oneDNN's blocked layout for the input's shape; a dense weight, which HPVM stores ``(in,
out)``, transposed to ``(out, in)``, the layout oneDNN's and MKL's dense kernels read
fastest at small batches — and keeps them, keyed on the arrays' memory tracker versions
(``MemoryTracker.version``: new whenever the host declares a write, a run may have written
the array, or it is tracked anew). So the derived weights are made once, not per launch,
and made again exactly when an array changes, under the contract device copies already
follow (host writes are declared with ``hpvm.mark_host_modified``). Without versions (a
back end run outside a runtime) nothing is kept: every call derives its weights again,
slower but exact.

On oneDNN the convolution (or dense layer), the bias and the activation are one library
call (``mkldnn._convolution_pointwise`` / ``_linear_pointwise``, the activation as a
post-op); a convolution's result is in
``channels_last`` layout, oneDNN's own (the next prepared convolution reads it without a
reorder; every other operation accepts any layout and computes the same values). A small
image (``BLOCKED_MAX_PIXELS``) convolved by a 3×3-or-larger kernel runs instead in oneDNN's
blocked layout, where its ``channels_last`` kernel is slow: the weight prepacked once
(``mkldnn_prepacked.conv2d_prepack``, relu as its post-op, any other activation in place
after it: such a chain runs blocked only when no pooling follows), an NCHW result. A 3×3,
stride-1 convolution with enough channels and output tiles (``winograd.wins``: ResNet-18's
and VGG-16's) runs first of all by Winograd's F(4×4, 3×3) (``winograd.conv3x3``: a quarter
of the multiplies, the weight transformed once, the bias, residual and relu in its output
step), faster than either oneDNN kernel there. Elsewhere (cuDNN, a torch without oneDNN, float64) the folded weights go to ``F.conv2d`` /
``F.linear`` and the activation runs in place.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ...ir.tensorops.torch_impl import TORCH
from . import winograd
from .layers import activate_, add_, pool_

Tensor = torch.Tensor

_CACHE_SIZE = 4  # derived weights kept per convolution (input shapes, weight versions)

#: How a prepared call's weights are laid out: as stored (``F.conv2d``, ``F.linear``, dense
#: layers), reordered for a ``channels_last`` input, prepacked for oneDNN's blocked layout,
#: or transformed for Winograd's algorithm (``winograd.prepare_weight``).
PLAIN, CHANNELS_LAST, BLOCKED, WINOGRAD = "plain", "channels_last", "blocked", "winograd"

#: A convolution whose output has at most this many pixels per channel (oh·ow) runs in
#: oneDNN's blocked layout (``Prepared._blocked``): its ``channels_last`` kernel (brgconv)
#: took 2–3.4× the time of the blocked one (jit:avx512_core) on VGG-16's 4×4 and 2×2
#: layers, 1.1–1.3× on 8×8, and the blocked kernel lost on 16×16 and 32×32 (one thread,
#: interleaved; docs/tensor.md §6, "Layout rule").
BLOCKED_MAX_PIXELS = 64


def onednn_available() -> bool:
    """Whether this torch has oneDNN's fused convolution (a private op: checked, not assumed)."""
    mkldnn = torch.ops.mkldnn
    return bool(
        torch.backends.mkldnn.is_available()
        and hasattr(mkldnn, "_convolution_pointwise")
        and hasattr(mkldnn, "_reorder_convolution_weight")
        and hasattr(mkldnn, "_linear_pointwise")
    )


def blocked_available() -> bool:
    """Whether this torch has oneDNN's prepacked convolution (``mkldnn_prepacked``, the
    TorchScript freezing pass's op: private, so checked, not assumed)."""
    try:
        ops = torch.ops.mkldnn_prepacked
        return bool(hasattr(ops, "conv2d_prepack") and hasattr(ops, "conv2d_run"))
    except (AttributeError, RuntimeError):
        return False


def _same_layout(other: Tensor, shape: tuple[int, ...]) -> bool:
    """Whether oneDNN can add ``other`` as a post-op: the result's shape and dtype, and its
    ``channels_last`` layout (what prepared convolutions compute)."""
    return (
        tuple(other.shape) == shape
        and other.dtype == torch.float32
        and other.device.type == "cpu"
        and other.is_contiguous(memory_format=torch.channels_last)
    )


#: oneDNN's name of each activation post-op.
_POST_OPS = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "clipped_relu": "hardtanh"}


def _blocked_post(s: Spec) -> str:
    """The prepacked call's post-op: relu when relu follows the convolution directly (the
    only activation ``mkldnn_prepacked.conv2d_prepack`` fuses); else none."""
    return "relu" if s.activation == "relu" and not s.residual else "none"


@dataclass(frozen=True)
class Spec:
    """A prepared chain: what is constant in it. Its array operands follow the input in
    this order: the weight, the bias if ``bias``, then γ, β, μ, σ² if ``batchnorm``."""

    kind: str  # "conv" (convolution / group_convolution first) or "linear" (mul first)
    bias: bool  # a 1-D bias follows the weight (an ``add``, or the layer call's bias)
    batchnorm: float | None  # its epsilon (convolutions only)
    activation: str | None
    lo: float
    hi: float
    pool: tuple[Any, ...] | None  # (operation, wh, ww, vpad, hpad, vstride, hstride)
    ops: tuple[str, ...]  # the operations the call performs (for introspection and tests)
    residual: bool = False  # an add of another tensor (its operand last) before the activation
    #: the bias is a 4-D root array, HPVM's (1, K, 1, 1) layout: each call checks that shape
    #: and runs the chain unfolded (``Prepared._unfolded``) when the array has another one
    channel_bias: bool = False
    vpad: int = 0
    hpad: int = 0
    vstride: int = 1
    hstride: int = 1
    groups: int = 1


class Prepared:
    """One prepared chain, called as ``prepared(x, w, [b], [γ, β, μ, σ²], [other], versions)``.

    ``versions`` (the tracker versions of the root's weight arrays, or ``None``) keys the
    derived weights: kept while it is the same; with ``None`` they are derived on every call.
    """

    def __init__(self, spec: Spec, onednn: bool | None = None):
        self.spec = spec
        self.onednn = onednn_available() if onednn is None else onednn
        self.blocked = self.onednn and blocked_available()
        self._cache: dict[tuple[Any, ...], tuple[Any, Tensor | None]] = {}
        self._lock = threading.Lock()  # launches of one root on several threads share the cache

    def __call__(self, x: Tensor, *arrays_and_versions: Any) -> Tensor:
        *arrays, versions = arrays_and_versions
        s = self.spec
        other = arrays.pop() if s.residual else None
        onednn = self.onednn and x.device.type == "cpu" and x.dtype == torch.float32
        post = _POST_OPS[s.activation] if s.activation else "none"
        scalars = [s.lo, s.hi] if s.activation == "clipped_relu" else []
        if s.kind == "linear":
            w, b = self._weights(x, arrays, versions, PLAIN)
            if x.dim() != 2:
                x = x.reshape(x.shape[0], -1)
            if onednn:
                return torch.ops.mkldnn._linear_pointwise(x, w, b, post, scalars, "")
            return activate_(F.linear(x, w, b), s.activation, s.lo, s.hi)
        if s.channel_bias:
            bias = arrays[1]
            if bias.dim() != 4 or tuple(bias.shape) != (1, arrays[0].shape[0], 1, 1):
                return self._unfolded(x, arrays, other)
            arrays = [arrays[0], bias.reshape(-1), *arrays[2:]]
        shape = self._out_shape(x, arrays[0])
        if onednn and self._winograd(arrays[0], shape):
            return self._run_winograd(x, arrays, versions, other, shape)
        if onednn and self._blocked(arrays[0], shape, other is not None):
            context, _ = self._weights(x, arrays, versions, BLOCKED)
            # a C-contiguous (NCHW) input: oneDNN reorders it into its blocked layout and the
            # result back (a channels_last input would pick the channels_last kernel again)
            y = torch.ops.mkldnn_prepacked.conv2d_run(x.contiguous(), context)
            if other is not None:  # the prepacked call fuses no add: the add, then the activation
                y = add_(y, other)
            if _blocked_post(s) == "none":  # any activation but a fused relu, in place
                y = activate_(y, s.activation, s.lo, s.hi)
            return y if s.pool is None else pool_(y, *s.pool)
        w, b = self._weights(x, arrays, versions, CHANNELS_LAST if onednn else PLAIN)
        padding, stride, dilation = [s.vpad, s.hpad], [s.vstride, s.hstride], [1, 1]
        if onednn and other is not None and _same_layout(other, shape):
            # oneDNN fuses only relu after a binary post-op; other activations run in place
            fused = s.activation == "relu"
            y = torch.ops.mkldnn._convolution_pointwise.binary(
                x,
                other,
                w,
                b,
                padding,
                stride,
                dilation,
                s.groups,
                "add",
                None,
                post if fused else None,
                [],
                "",
            )
            if not fused:
                y = activate_(y, s.activation, s.lo, s.hi)
        elif onednn and other is None:
            y = torch.ops.mkldnn._convolution_pointwise(
                x, w, b, padding, stride, dilation, s.groups, post, scalars, ""
            )
        else:  # the residual add on its own when its operand is laid out or shaped otherwise
            if onednn:
                y = torch.ops.mkldnn._convolution_pointwise(
                    x, w, b, padding, stride, dilation, s.groups, "none", [], ""
                )
            else:
                y = F.conv2d(x, w, b, stride, padding, 1, s.groups)
            y = activate_(y if other is None else add_(y, other), s.activation, s.lo, s.hi)
        return y if s.pool is None else pool_(y, *s.pool)

    def _unfolded(self, x: Tensor, arrays: Sequence[Tensor], other: Tensor | None) -> Tensor:
        """The chain operation by operation, as the unprepared graph runs it: for a 4-D
        bias operand that is not one value per output channel (``Spec.channel_bias``), which
        no folding or fused bias can take."""
        s = self.spec
        w, bias, *stats = arrays
        if s.groups > 1:
            y = TORCH["group_convolution"](x, w, s.vpad, s.hpad, s.vstride, s.hstride, s.groups)
        else:
            y = TORCH["convolution"](x, w, s.vpad, s.hpad, s.vstride, s.hstride)
        y = TORCH["add"](y, bias)
        if s.batchnorm is not None:
            y = TORCH["batchnorm"](y, *stats, s.batchnorm)
        if other is not None:
            y = TORCH["add"](y, other)
        y = activate_(y, s.activation, s.lo, s.hi)
        return y if s.pool is None else pool_(y, *s.pool)

    def _out_shape(self, x: Tensor, w: Tensor) -> tuple[int, ...]:
        s = self.spec
        oh = (x.shape[2] + 2 * s.vpad - w.shape[2]) // s.vstride + 1
        ow = (x.shape[3] + 2 * s.hpad - w.shape[3]) // s.hstride + 1
        return (x.shape[0], w.shape[0], oh, ow)

    def _winograd(self, w: Tensor, shape: tuple[int, ...]) -> bool:
        """Whether the convolution runs by Winograd's F(4×4, 3×3) (``winograd.wins``): a
        3×3 kernel, stride 1, no groups, on shapes where it beat oneDNN's direct kernels."""
        s = self.spec
        return (
            s.groups == 1
            and tuple(w.shape[2:]) == (3, 3)
            and (s.vstride, s.hstride) == (1, 1)
            and winograd.wins(w.shape[1], w.shape[0], shape)
        )

    def _run_winograd(
        self,
        x: Tensor,
        arrays: Sequence[Tensor],
        versions: tuple[Any, ...] | None,
        other: Tensor | None,
        shape: tuple[int, ...],
    ) -> Tensor:
        """The chain by ``winograd.conv3x3``: the bias, a residual operand of the result's
        shape and a relu after it are added in its output step; any other residual operand
        (one that broadcasts) and activation follow in place; then the pooling."""
        s = self.spec
        u, b = self._weights(x, arrays, versions, WINOGRAD)
        fused_other = other if other is not None and tuple(other.shape) == shape else None
        relu = s.activation == "relu" and (other is None or fused_other is not None)
        y = winograd.conv3x3(x, u, b, s.vpad, s.hpad, fused_other, relu)
        if other is not None and fused_other is None:
            y = add_(y, other)
        if not relu:
            y = activate_(y, s.activation, s.lo, s.hi)
        return y if s.pool is None else pool_(y, *s.pool)

    def _blocked(self, w: Tensor, shape: tuple[int, ...], residual: bool) -> bool:
        """Whether the convolution runs in oneDNN's blocked layout: a small output
        (``BLOCKED_MAX_PIXELS``), a dense spatial kernel (a 1×1 convolution is a matrix
        product, which the ``channels_last`` kernel runs as fast; a grouped one has no
        blocked prepacked form), and a relu or no activation (the one post-op the prepacked
        call fuses), a residual add first, or no pooling after (then the add and any
        activation run after the call, in place). A tanh, sigmoid or ReLU6 chain with a
        pooling stays ``channels_last``: there oneDNN fuses the activation and the pooling
        reads ``channels_last`` values, where PyTorch's max pooling of the blocked call's
        NCHW result took 3–7× as long (AlexNet's layers, docs/tensor.md §6)."""
        s = self.spec
        return (
            self.blocked
            and s.groups == 1
            and w.shape[2] * w.shape[3] > 1
            and (residual or s.activation in (None, "relu") or s.pool is None)
            and shape[2] * shape[3] <= BLOCKED_MAX_PIXELS
        )

    def _weights(
        self, x: Tensor, arrays: Sequence[Tensor], versions: tuple[Any, ...] | None, layout: str
    ) -> tuple[Any, Tensor | None]:
        if versions is None:
            return self._derive(x, arrays, layout)
        key = (
            versions,
            tuple(x.shape) if layout != PLAIN else None,  # oneDNN's weight layout depends on the input's
            layout,
            *((a.data_ptr(), tuple(a.shape), a.stride(), a.dtype, a.device) for a in arrays),
        )
        found = self._cache.get(key)
        if found is None:
            with self._lock:
                found = self._cache.get(key)
                if found is None:
                    found = self._derive(x, arrays, layout)
                    if len(self._cache) >= _CACHE_SIZE:
                        self._cache.pop(next(iter(self._cache)))
                    self._cache[key] = found
        return found

    def _derive(self, x: Tensor, arrays: Sequence[Tensor], layout: str) -> tuple[Any, Tensor | None]:
        """The weight and bias the library call runs with (new tensors where they differ
        from the arrays: the caller's are never written); for ``BLOCKED``, oneDNN's
        prepacked convolution (weight, bias, sizes and the fused relu) and ``None``."""
        s = self.spec
        w, rest = arrays[0], list(arrays[1:])
        if s.kind == "linear":  # HPVM's (in, out) weight as (out, in), read fastest
            w = w.t().contiguous()
        b = rest.pop(0) if s.bias else None  # 1-D, one value per output channel (the rules check)
        if s.batchnorm is not None:
            gamma, beta, mean, var = rest
            scale = gamma / torch.sqrt(var + s.batchnorm)
            w = w * scale.reshape(-1, *[1] * (w.dim() - 1))
            b = (b - mean if b is not None else -mean) * scale + beta
        if layout == WINOGRAD:
            weight = winograd.prepare_weight(w, x.shape, s.vpad, s.hpad)
            return weight, (b.contiguous() if b is not None else None)
        if layout == BLOCKED:  # the relu fused unless a residual add comes before it (``_blocked``)
            padding, stride = [s.vpad, s.hpad], [s.vstride, s.hstride]
            post = _blocked_post(s)
            context = torch.ops.mkldnn_prepacked.conv2d_prepack(
                w.contiguous(), b, stride, padding, [1, 1], s.groups, list(x.shape), post
            )
            return context, None
        if layout == CHANNELS_LAST:
            w = torch.ops.mkldnn._reorder_convolution_weight(
                w.contiguous(), [s.vpad, s.hpad], [s.vstride, s.hstride], [1, 1], s.groups, list(x.shape)
            )
        return w, (b.contiguous() if b is not None else None)


__all__ = ["BLOCKED_MAX_PIXELS", "WINOGRAD", "Prepared", "Spec", "blocked_available", "onednn_available"]

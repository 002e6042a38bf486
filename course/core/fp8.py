"""FP8 training: which FLOPs run at the FP8 peak, what the casts cost, what memory changes.

Hopper-class runs execute the matrix multiplications of the transformer layers (forward,
input-gradient and weight-gradient GEMMs) in FP8 with fine-grained scaling: DeepSeek-V3
scales activations per 1 x 128 tile and weights per 128 x 128 block, keeps master
weights, gradients and optimizer states in higher precision, and leaves the embedding,
the output head, the MoE router, the normalisations and attention in BF16/FP32
(DeepSeek-AI 2024, sec. 3.3.1-3.3.3, Fig. 6). NVIDIA Transformer Engine does the same
for its ``Linear`` layers under ``fp8_autocast``; its attention runs in BF16 by default.

So an FP8 step is not "the BF16 step at twice the peak": only the layer GEMMs speed up;
every GEMM operand is produced by a cast kernel (read 16-bit, write 8-bit plus scales),
a memory-bound cost; the weights are cached in FP8 for the step (one more byte per
weight); GEMM inputs saved for the backward pass are kept in FP8 (one byte per element
instead of two); DeepSeek-V3 dispatches MoE tokens in FP8 and combines in BF16.
"""

from __future__ import annotations


from . import _validate as v

__all__ = ["FP8_SCALE_TILE", "fp8_gemm_flops_per_token", "fp8_compute_time", "fp8_cast_bytes_per_token",
           "fp8_gemm_input_elements_per_token"]

#: Elements per scaling factor (one FP32 scale per 1 x 128 activation tile).
#: Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.3.2 (fine-grained quantization, ``N_C = 128``).
FP8_SCALE_TILE = 128

#: FP8 operands each linear layer's input and output gradient become per training step: the
#: forward input, its transpose for the weight gradient, the output gradient and its transpose.
#: Source: DeepSeek-AI 2024, Fig. 6 (Fprop, Dgrad and Wgrad GEMMs take FP8 inputs); NVIDIA
#: Transformer Engine (FP8 GEMMs on Hopper take both operands K-major: a transposed cast).
_CASTS_PER_OPERAND = 2


def fp8_gemm_flops_per_token(layer_params, layers):
    """Forward FLOPs per token that run in FP8: the layer GEMMs, ``2 P_layer l``.

    Attention scores, the output layer and the router stay in BF16 (DeepSeek-V3, sec.
    3.3.1); backward passes cost twice the forward, in FP8 as well.

    Parameters
    ----------
    layer_params : float or array_like, > 0
        Weights a token passes through in one layer (the active ones of an MoE).
    layers : int or array_like of int, >= 1

    Returns
    -------
    float or ndarray
        FLOP per token (forward).

    Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.3.1 and Fig. 6; Kaplan et al. 2020, sec.
    2.1 (2 FLOP per weight and token).

    Examples
    --------
    >>> fp8_gemm_flops_per_token(1e9, 80) / 1e9
    160.0
    """
    return v.scalar_or_array(2.0 * v.positive("layer_params", layer_params) * v.integer("layers", layers))


def fp8_compute_time(fp8_flops, other_flops, fp8_peak, bf16_peak, efficiency):
    """Seconds of computation when ``fp8_flops`` run at the FP8 peak and the rest at the BF16 one.

    ``fp8_flops / (fp8_peak e) + other_flops / (bf16_peak e)``, one sustained share ``e`` for
    both (an assumption: fine-grained scaling costs FP8 GEMMs some of their peak, DeepSeek-V3
    sec. 3.3.2 promotes partial sums to FP32 every 128 elements).

    Parameters
    ----------
    fp8_flops, other_flops : float or array_like, >= 0
    fp8_peak, bf16_peak : float or array_like, > 0
        FLOP/s.
    efficiency : float or array_like in (0, 1]

    Returns
    -------
    float or ndarray
        Seconds.

    Source: NVIDIA H100 data sheet (dense FP8 1979, BF16 989 TFLOPS); DeepSeek-AI 2024,
    sec. 3.3.

    Examples
    --------
    >>> round(fp8_compute_time(2e15, 1e15, 1979e12, 989e12, 0.5) , 3)
    4.043
    """
    f8 = v.non_negative("fp8_flops", fp8_flops)
    rest = v.non_negative("other_flops", other_flops)
    p8 = v.positive("fp8_peak", fp8_peak)
    p16 = v.positive("bf16_peak", bf16_peak)
    e = v.fraction("efficiency", efficiency, low_open=True)
    return v.scalar_or_array(f8 / (p8 * e) + rest / (p16 * e))


def fp8_gemm_input_elements_per_token(hidden, mlp_width):
    """GEMM inputs of one layer per token: ``3 h + w`` (QKV, output projection, MLP in; MLP out).

    ``w`` is the inner width the second MLP matrix reads (``ffn``; for an MoE the active
    routed and shared widths together). These are the elements cast to FP8 in the forward
    pass, kept in FP8 for the backward pass, and (as output gradients) cast again.

    Parameters
    ----------
    hidden, mlp_width : float or array_like, > 0

    Returns
    -------
    float or ndarray
        Elements per token and layer.

    Source: Korthikanti et al. 2022, sec. 4.1 (the inputs of a layer's four GEMM groups);
    DeepSeek-AI 2024, sec. 3.3.3 (FP8 activation caching).

    Examples
    --------
    >>> fp8_gemm_input_elements_per_token(16384, 53248)
    102400.0
    """
    return v.scalar_or_array(3.0 * v.positive("hidden", hidden) + v.positive("mlp_width", mlp_width))


def fp8_cast_bytes_per_token(gemm_input_elements, scale_tile=FP8_SCALE_TILE):
    """HBM bytes the FP8 cast kernels of one layer move per token and training step.

    Each GEMM input and each output gradient is read in 16-bit (2 bytes) and written in FP8
    (1 byte plus a 4-byte scale per ``scale_tile`` elements), twice (the operand and its
    transpose): ``2 x 2 x (3 + 4 / tile)`` bytes per element.

    Parameters
    ----------
    gemm_input_elements : float or array_like, >= 0
        :func:`fp8_gemm_input_elements_per_token`.
    scale_tile : int, optional

    Returns
    -------
    float or ndarray
        Bytes.

    Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.3.2 (1 x 128 tiles, FP32 scales);
    Williams et al. 2009 (roofline: a cast is memory-bound).

    Examples
    --------
    >>> fp8_cast_bytes_per_token(1000)
    12125.0
    """
    n = v.non_negative("gemm_input_elements", gemm_input_elements)
    tile = v.integer("scale_tile", scale_tile)
    return v.scalar_or_array(2.0 * _CASTS_PER_OPERAND * n * (3.0 + 4.0 / tile))

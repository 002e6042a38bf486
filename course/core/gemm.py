"""Achieved speed of one matrix multiplication from its shape: measured ceiling, wave quantization, roofline.

A GEMM ``C[M, N] = A[M, K] B[K, N]`` of ``2 M N K`` FLOPs does not run at the data sheet's
peak. Three things set its speed, each from a published measurement or a documented mechanism:

1. **The measured ceiling** of the accelerator and precision: the best share of the dense peak
   any shape reaches (the "maximum achievable matmul FLOPS", MAMF, measured with
   ``mamf-finder.py`` by S. Bekman, *Machine Learning Engineering*, compute/accelerator/README.md,
   "Maximum Achievable Matmul FLOPS comparison table", mean of 100 runs): BF16 A100 SXM 86.9 %,
   H100 SXM 80.3 % ("H200 is the same"), B200 77.6 %, B300 78.6 %, GB200 72.9 % (of 2.5 PFLOPS);
   FP8 H100 70.9 %, H200 73.4 %, B200 76.3 %, B300 74.5 %, GB200 72.3 %. Stored per accelerator
   in :attr:`~course.core.catalog.Accelerator.matmul_ceilings`.
2. **Wave quantization**: the output is cut into tiles, one thread block each, and the blocks run in
   waves of one per streaming multiprocessor; a last, partly filled wave costs a whole wave
   (NVIDIA Deep Learning Performance Guide, "Matrix Multiplication Background", sec. "Wave
   Quantization": e.g. 108 SMs of an A100 and 256 x 128 tiles). Thin tensor-parallel slices and
   few tokens per micro-batch leave few tiles, so the last wave weighs more.
3. **The roofline**: a GEMM cannot finish before its operands and result cross HBM once
   (``2 (M K + K N + M N)`` bytes in 16-bit; Williams et al. 2009, Roofline). Few rows (tokens
   per expert of an MoE) make it memory-bound.

``time = max(2 M N K / (peak x ceiling x wave_efficiency), bytes / HBM bandwidth)``.

Examples
--------
>>> from course.core import catalog
>>> h100 = catalog.accelerator("H100")
>>> round(float(gemm_efficiency(8192, 8192, 8192, h100)), 3)  # 2,048 tiles in 16 waves of 132: near the ceiling
0.779
>>> round(float(gemm_efficiency(1024, 1024, 16384, h100)), 3)  # 64 tiles of 128 x 128 on 132 SMs: one thin wave
0.389
"""

from __future__ import annotations

import numpy as np

from . import _validate as v

__all__ = ["TILE_M", "TILE_N", "TILES", "DEFAULT_MATMUL_CEILING", "matmul_ceiling", "wave_efficiency", "gemm_efficiency",
           "FLASH_ATTENTION_2_LENGTHS", "FLASH_ATTENTION_2_TFLOPS", "ATTENTION_KERNEL_TFLOPS", "attention_length_factor",
           "gemm_time", "layer_gemm_efficiency"]

#: Output tile of one thread block, rows x columns: 128 x 256, the largest tile cuBLAS / CUTLASS use for
#: BF16 on Hopper and Blackwell (the "256 x 128 tiles" of NVIDIA's Matrix Multiplication Background guide,
#: sec. "Wave Quantization", drawn with the longer side on N).
TILE_M, TILE_N = 128, 256
#: Tiles the library chooses among (rows, columns): the guide's 256 x 128 both ways round and 128 x 128;
#: :func:`gemm_time` takes the one that leaves the fewest SMs idle in the last wave, as cuBLAS's heuristics
#: choose "among tile sizes" (same guide, sec. "Tile Quantization").
TILES = ((128, 256), (256, 128), (128, 128))

#: Ceiling used where an accelerator has none measured: the H100 SXM's BF16 80.3 % (Bekman, MAMF table).
DEFAULT_MATMUL_CEILING = 0.803


def matmul_ceiling(accelerator, precision="bf16"):
    """Measured share of the dense ``precision`` peak the best-shaped GEMM reaches on ``accelerator``.

    Parameters
    ----------
    accelerator : Accelerator
    precision : str, optional
        ``"bf16"``/``"fp16"`` (one measurement) or ``"fp8"``; others fall back to the BF16 one.

    Returns
    -------
    float in (0, 1]

    Source: S. Bekman, *Machine Learning Engineering*, "Maximum Achievable Matmul FLOPS comparison
    table" (stored in ``Accelerator.matmul_ceilings``); :data:`DEFAULT_MATMUL_CEILING` where none is.

    >>> from course.core import catalog
    >>> matmul_ceiling(catalog.accelerator("A100")), matmul_ceiling(catalog.accelerator("H100"), "fp8")
    (0.869, 0.709)
    """
    table = getattr(accelerator, "matmul_ceilings", None) or {}
    key = "bf16" if precision == "fp16" else precision
    return float(table.get(key, table.get("bf16", DEFAULT_MATMUL_CEILING)))


def wave_efficiency(m, n, sms, tile_m=TILE_M, tile_n=TILE_N):
    """Share of the SM-waves a GEMM with an ``m x n`` output fills: ``tiles / (waves x sms)``.

    ``tiles = ceil(m / tile_m) x ceil(n / tile_n)``, ``waves = ceil(tiles / sms)``. Tile
    quantization inside a tile (a partly filled edge tile) is included through the ceilings.

    Parameters
    ----------
    m, n : float or array, > 0
        Output rows (tokens) and columns.
    sms : int >= 1
        Streaming multiprocessors (0 or None: 1, no quantization).

    Returns
    -------
    float or ndarray in (0, 1]

    Source: NVIDIA Deep Learning Performance Guide, "Matrix Multiplication Background", sec.
    "Wave Quantization".

    >>> wave_efficiency(8192, 8192, 132)  # 2,048 tiles = 15.5 waves of 132
    0.9696969696969697
    """
    m = np.asarray(v.positive("m", m), dtype=float)
    n = np.asarray(v.positive("n", n), dtype=float)
    if not sms:
        return v.scalar_or_array(np.ones(np.broadcast_shapes(m.shape, n.shape)))
    tiles = np.ceil(m / tile_m) * np.ceil(n / tile_n)
    waves = np.ceil(tiles / sms)
    return v.scalar_or_array(tiles / (waves * sms))


def gemm_time(m, n, k, accelerator, precision="bf16", operand_bytes=2.0):
    """Seconds one ``m x k`` by ``k x n`` GEMM takes: the slower of its compute and its HBM traffic.

    ``max(2 m n k / (peak x ceiling x wave_efficiency), operand_bytes (m k + k n + m n) / HBM bandwidth)``,
    the wave efficiency of the best of :data:`TILES`.

    Returns
    -------
    float or ndarray, seconds

    Source: see the module docstring (MAMF ceilings, NVIDIA's wave quantization, the roofline).

    >>> from course.core import catalog
    >>> round(float(gemm_time(8192, 8192, 8192, catalog.accelerator("H100"))) * 1e3, 2)
    1.43
    """
    m, n, k = (np.asarray(x, dtype=float) for x in (m, n, k))
    peak = accelerator.peak(precision)
    sms = getattr(accelerator, "sms", 0)
    waves = np.max([np.asarray(wave_efficiency(m, n, sms, tm, tn)) for tm, tn in TILES], axis=0)
    compute = 2.0 * m * n * k / (peak * matmul_ceiling(accelerator, precision) * waves)
    memory = operand_bytes * (m * k + k * n + m * n) / accelerator.memory_bandwidth
    return v.scalar_or_array(np.maximum(compute, memory))


def gemm_efficiency(m, n, k, accelerator, precision="bf16", operand_bytes=2.0):
    """Achieved share of the dense ``precision`` peak of one GEMM: ``2 m n k / (time x peak)``.

    Parameters
    ----------
    m, n, k : float or array, > 0
        Rows of the output (tokens), its columns, and the reduced dimension.
    accelerator : Accelerator
    precision : str, optional
    operand_bytes : float, optional
        Bytes per element in HBM (2 for 16-bit, 1 for FP8).

    Returns
    -------
    float or ndarray in (0, 1)

    Source: :func:`gemm_time`.
    """
    t = gemm_time(m, n, k, accelerator, precision, operand_bytes)
    return v.scalar_or_array(2.0 * np.asarray(m, float) * n * k / (np.asarray(t) * accelerator.peak(precision)))


def layer_gemm_efficiency(shapes, accelerator, precision="bf16", operand_bytes=2.0):
    """Efficiency of a set of GEMMs run one after another: total FLOPs over total time, over peak.

    Parameters
    ----------
    shapes : sequence of (m, n, k, count)
        Each GEMM's shape (broadcastable arrays) and how many of it run (``count`` may be fractional:
        an average over layers).

    Returns
    -------
    float or ndarray in (0, 1)

    Source: :func:`gemm_time`.

    >>> from course.core import catalog
    >>> a100 = catalog.accelerator("A100")
    >>> round(float(layer_gemm_efficiency([(2048, 3 * 1536, 12288, 1), (2048, 12288, 1536, 1)], a100)), 3)
    0.785
    """
    if all(not getattr(x, "shape", ()) for shape in shapes for x in shape):  # numbers and 0-d arrays
        # one layout (a plan, an instrument's curve over DP): a pure function of numbers, looked up once computed
        key = (tuple(float(x) for shape in shapes for x in shape), _accelerator_key(accelerator, precision),
               precision, float(operand_bytes))
        hit = _SCALAR_LAYER_EFFICIENCY.get(key)
        if hit is None:
            if len(_SCALAR_LAYER_EFFICIENCY) >= 4096:
                _SCALAR_LAYER_EFFICIENCY.clear()
            hit = _SCALAR_LAYER_EFFICIENCY[key] = _layer_gemm_efficiency(shapes, accelerator, precision, operand_bytes)
        return hit
    return _layer_gemm_efficiency(shapes, accelerator, precision, operand_bytes)


#: Efficiencies of single layouts already computed, keyed by their numbers (see :func:`layer_gemm_efficiency`).
_SCALAR_LAYER_EFFICIENCY = {}


def _accelerator_key(accelerator, precision):
    """Every number of ``accelerator`` that :func:`gemm_time` reads at ``precision``."""
    return (accelerator.peak(precision), matmul_ceiling(accelerator, precision), getattr(accelerator, "sms", 0),
            accelerator.memory_bandwidth)


def _layer_gemm_efficiency(shapes, accelerator, precision, operand_bytes):
    flops = time = 0.0
    for m, n, k, count in shapes:
        flops = flops + count * 2.0 * np.asarray(m, float) * n * k
        time = time + count * np.asarray(gemm_time(m, n, k, accelerator, precision, operand_bytes))
    return v.scalar_or_array(flops / (time * accelerator.peak(precision)))


#: FlashAttention-2's forward speed on an H100 SXM5 (BF16, causal, head dim 128), TFLOP/s, by sequence length
#: (Shah et al. 2024, FlashAttention-3, arXiv 2407.08608, Figure "Attention forward speed, head dim 128 (H100 80GB
#: SXM5)", causal panel): the kernel reaches its plateau (333-335, about the "35 % utilization" of the abstract)
#: only from 8K tokens; at 512 tokens it runs at 191.
FLASH_ATTENTION_2_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)
FLASH_ATTENTION_2_TFLOPS = (191.0, 260.0, 298.0, 319.0, 333.0, 335.0)

#: The same figure's other fused kernels on the same H100 (BF16, causal, head dim 128, forward), TFLOP/s at
#: :data:`FLASH_ATTENTION_2_LENGTHS`: FlashAttention-3 and cuDNN. Selected with the planner's ``attention_kernel``.
ATTENTION_KERNEL_TFLOPS = {
    "flash-attention-2": FLASH_ATTENTION_2_TFLOPS,
    "flash-attention-3": (292.0, 423.0, 521.0, 579.0, 602.0, 616.0),
    "cudnn": (315.0, 410.0, 484.0, 518.0, 529.0, 539.0),
}


_LOG2_LENGTHS = np.log2(FLASH_ATTENTION_2_LENGTHS)


def attention_length_factor(seq_len, kernel="flash-attention-2"):
    """Speed of a fused causal attention kernel on ``seq_len`` query tokens relative to FlashAttention-2 at 8K.

    Interpolated (log-linear in the length) in the kernel's measured H100 curve
    (:data:`ATTENTION_KERNEL_TFLOPS`), divided by FlashAttention-2's 8K value (the plateau the catalog's
    ``attention_efficiency`` states); for FlashAttention-2 1 from 8K up, 191/333 = 0.57 at 512; FlashAttention-3
    602/333 = 1.81 at 8K.
    Context parallelism hands each rank ``s / CP`` queries, so CP 8 at 8K runs the kernel on 1,024-token
    chunks at 0.78 of its plateau speed.

    Parameters
    ----------
    seq_len : float or array, > 0
        Tokens of the sequence chunk one attention call processes.
    kernel : {"flash-attention-2", "flash-attention-3", "cudnn"}, optional

    Returns
    -------
    float or ndarray, > 0

    Source: Shah et al. 2024 (FlashAttention-3), Figure "Attention forward speed, head dim 128 (H100 80GB SXM5)",
    causal, FlashAttention-2 bars.

    >>> round(float(attention_length_factor(1024)), 3), float(attention_length_factor(8192))
    (0.781, 1.0)
    >>> round(float(attention_length_factor(8192, "flash-attention-3")), 3)
    1.808
    """
    length = np.asarray(v.positive("seq_len", seq_len), dtype=float)
    curve = ATTENTION_KERNEL_TFLOPS[v.choice("kernel", kernel, tuple(ATTENTION_KERNEL_TFLOPS))]
    speed = np.interp(np.log2(np.minimum(length, FLASH_ATTENTION_2_LENGTHS[4])), _LOG2_LENGTHS, curve)
    return v.scalar_or_array(speed / FLASH_ATTENTION_2_TFLOPS[4])

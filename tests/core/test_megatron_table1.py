"""Calibration: the planner against Megatron-LM SC21 Table 1 (shared/reference/published.md).

One assumption, ``DEFAULT_COMPUTE_EFFICIENCY`` (share of dense peak the matrix
multiplications sustain), is shared by every row; everything else is the paper's
configuration. Run with ``-s`` to see the table.
"""

import pytest

from course.core import catalog as cat
from course.core.planner import DEFAULT_COMPUTE_EFFICIENCY, iteration_flops, megatron_table1

# published.md: achieved TFLOP/s per GPU, in Table 1's row order
PUBLISHED = [137, 135, 140, 148, 163, 163]


@pytest.fixture(scope="module")
def rows():
    rows = megatron_table1()
    print(f"\nMegatron-LM SC21 Table 1, compute_efficiency = {DEFAULT_COMPUTE_EFFICIENCY}")
    for r in rows:
        print(f"  {r['params_b']:>7.1f}B TP={r['tp']} PP={r['pp']:<3} published "
              f"{r['published_tflops']:>4.0f}  predicted {r['predicted_tflops']:6.1f}  "
              f"{r['error']:+.1%}")
    return rows


def test_all_six_rows_are_checked(rows):
    assert [round(r["published_tflops"]) for r in rows] == PUBLISHED


@pytest.mark.parametrize("i", range(6))
def test_row_within_15_percent(rows, i):
    r = rows[i]
    assert abs(r["predicted_tflops"] / PUBLISHED[i] - 1) <= 0.15, r


def test_every_row_is_a_feasible_configuration(rows):
    # the paper ran them, so the planner must not call them invalid or out of memory
    for r in rows:
        assert r["feasible"], r


@pytest.mark.parametrize("row", cat.MEGATRON_TABLE1, ids=lambda r: r[0].name)
def test_flops_per_iteration_is_eq3(row):
    # eq. 3, published.md: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
    m, B = row[0], row[4]
    s, l, h, V = m.seq_len, m.layers, m.hidden, m.vocab
    eq3 = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert iteration_flops(m, B, "full") == pytest.approx(eq3, rel=1e-12)

"""Print the planner's predicted-vs-published table for Megatron-LM SC21 Table 1.

    .venv/bin/python benchmarks/megatron_table1.py [compute_efficiency]

The same numbers are checked (within +-15 %) by tests/core/test_megatron_table1.py.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from course.core.planner import DEFAULT_COMPUTE_EFFICIENCY, format_megatron_table1  # noqa: E402 -- after the repository is put on sys.path

if __name__ == "__main__":
    eff = float(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_COMPUTE_EFFICIENCY
    print(format_megatron_table1(eff))

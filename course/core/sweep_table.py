"""The table :func:`~course.core.planner.sweep` returns: columns of equal length, read lazily.

A sweep evaluates a grid of configurations with each setting on its own axis (see
:func:`course.core.plan_terms.columns`); most columns vary along only some axes. The
table keeps them compact and gathers a column for its rows the first time it is asked
for, so a sweep of 100,000 configurations pays only for the columns that are read
(sorting needs the speed and feasibility; ``row(0)`` reads one row of each column).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

import numpy as np

__all__ = ["SweepTable", "GridRows"]


class GridRows(Mapping):
    """Columns of selected rows of an evaluated grid, gathered on first access.

    ``cols`` maps names to arrays broadcastable to ``shape``; ``rows`` are flat indices
    into the grid; ``derived`` maps extra names to functions of this mapping (joined
    violation codes and the like); names starting with one of ``hidden`` are only read
    by them.
    """

    def __init__(self, cols, shape, rows, derived=None, hidden=()):
        self._cols, self._shape, self._rows = cols, tuple(shape), np.asarray(rows)
        self._derived, self._hidden = dict(derived or {}), tuple(hidden)
        self._cache, self._flat = {}, {}

    @property
    def nrows(self):
        return len(self._rows)

    def take(self, index):
        return GridRows(self._cols, self._shape, self._rows[index], self._derived, self._hidden)

    def _names(self):
        return [k for k in self._cols if not k.startswith(self._hidden)] + list(self._derived)

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._names())

    def __contains__(self, name):
        return name in self._cols or name in self._derived

    def __getitem__(self, name):
        if name not in self._cache:
            if name in self._derived:
                self._cache[name] = np.asarray(self._derived[name](self))
            elif name in self._cols:
                self._cache[name] = self._gather(self._cols[name])
            else:
                raise KeyError(name)
        return self._cache[name]

    def _gather(self, column):
        a = np.asarray(column)
        a = a.reshape((1,) * (len(self._shape) - a.ndim) + a.shape)
        # axes a broadcast view does not really vary along (stride 0) count as length 1
        a = a[tuple(slice(None) if n > 1 and st else slice(0, 1) for n, st in zip(a.shape, a.strides))]
        key = a.shape
        if key not in self._flat:
            where = np.unravel_index(self._rows, self._shape)
            idx, stride = np.zeros(len(self._rows), np.int64), 1
            for axis in reversed(range(len(self._shape))):
                if key[axis] > 1:
                    idx += where[axis] * stride
                    stride *= key[axis]
            self._flat[key] = idx
        return np.ascontiguousarray(a).reshape(-1)[self._flat[key]]


class SweepTable:
    """Columns of equal length (NumPy arrays) with a few table verbs.

    ``table["throughput"]``, ``len(table)``, ``table.sort_by("tokens_per_second")``,
    ``table.top(5)``, ``table.feasible_only()``, ``table.row(0)`` (a dict),
    ``table.to_pandas()``. ``columns`` is a dict of arrays or a :class:`GridRows`.
    """

    def __init__(self, columns, meta: Optional[dict] = None):
        if isinstance(columns, GridRows):
            self.columns = columns
        else:
            self.columns = {k: np.asarray(c) for k, c in columns.items()}
            lengths = {len(c) for c in self.columns.values()}
            if len(lengths) > 1:
                raise ValueError("columns must all have the same length")
        self.meta = dict(meta or {})

    def __len__(self):
        if isinstance(self.columns, GridRows):
            return self.columns.nrows
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, name):
        if name not in self.columns:
            raise ValueError(f"column must be one of {', '.join(self.columns)}; got {name!r}")
        return self.columns[name]

    def __repr__(self):
        return f"SweepTable({len(self)} rows: {', '.join(self.columns)})"

    def take(self, index) -> "SweepTable":
        if isinstance(self.columns, GridRows):
            return SweepTable(self.columns.take(index), self.meta)
        return SweepTable({k: c[index] for k, c in self.columns.items()}, self.meta)

    def sort_by(self, column="tokens_per_second", descending=True) -> "SweepTable":
        key = self[column]
        order = np.argsort(-key if descending else key, kind="stable")
        return self.take(order)

    def top(self, k=10, column="tokens_per_second", feasible_only=True) -> "SweepTable":
        t = self.feasible_only() if feasible_only else self
        return t.sort_by(column).take(slice(0, k))

    def feasible_only(self) -> "SweepTable":
        return self.take(self.columns["feasible"])

    def row(self, i) -> dict:
        cols, j = self.columns, i
        if isinstance(cols, GridRows):
            # the first row read gathers one row of each column (a sweep's best row, cheaply); a second
            # one means rows are being walked: gather whole columns once, so every later row is free
            self._rows_read = getattr(self, "_rows_read", 0) + 1
            if self._rows_read == 1:
                cols, j = cols.take(np.array([i])), 0
        return {k: c[j].item() if hasattr(c[j], "item") else c[j] for k, c in cols.items()}

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(dict(self.columns.items()))

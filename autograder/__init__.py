"""Grading on top of nbgrader (being written)."""

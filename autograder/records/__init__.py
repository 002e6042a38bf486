"""What grading records: grades files, late policy, extensions, the term, exports for an LMS.

* :mod:`~autograder.records.grades`: ``grades.json`` / ``grades.csv``, merging shards, the summary table
* :mod:`~autograder.records.late`: a late policy from submission timestamps
* :mod:`~autograder.records.term`: a term of assignments on one course root, extensions
* :mod:`~autograder.records.lms`: a CSV for Canvas's gradebook import
"""

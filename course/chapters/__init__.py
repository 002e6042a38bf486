"""The workbook's chapters as content: ``chNN.py`` declares chapter NN as one
:class:`~course.assess.activity.Chapter` (``ACTIVITY``) and its exercises through
:mod:`course.assess.authoring`. Nothing is discovered: :mod:`course.activities` lists every chapter.
"""

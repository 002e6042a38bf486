"""The assessment engine: one :class:`~course.assess.activity.Activity` model with typed items, the
registry of graded parts, identity and variants, the cell builder, visible checks, the clean room,
feedback and mastery. It knows no chapter or lab: :mod:`course.activities` lists them and
:mod:`course.notebook_api` binds the engine to that list (tests/test_import_graph.py checks both)."""

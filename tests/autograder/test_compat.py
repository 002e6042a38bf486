"""autograder/compat.py: every reliance on library internals is guarded, and each patch is undone.

Each guard trips when the installed version is not a checked one, and when any function it
relies on changed (here: replaced by another function); a Grader then refuses to start with a
message naming the library, the version and what to do.
"""

from __future__ import annotations

import importlib

import nbgrader.api
import pytest

from autograder import compat

TARGETS = [(guard, target) for guard in compat.GUARDS for target, _ in guard.sources]


def test_every_guard_holds_on_the_locked_environment():
    for guard in compat.GUARDS:
        compat.check(guard)
    assert set(compat.CHECKED) == {"nbgrader", "jupyter_client", "nbclient", "jsonschema"}
    assert {guard.library for guard in compat.GUARDS} == set(compat.CHECKED)


@pytest.mark.parametrize("guard", compat.GUARDS, ids=lambda guard: guard.name)
def test_a_version_not_checked_trips_the_guard(guard, monkeypatch):
    real = compat.installed_version
    monkeypatch.setattr(compat, "installed_version",
                        lambda library: "99.0.0" if library == guard.library else real(library))
    with pytest.raises(compat.CompatError) as caught:
        compat.check(guard)
    message = str(caught.value)
    assert f"{guard.library} 99.0.0 is installed" in message and guard.name in message
    assert ", ".join(compat.CHECKED[guard.library]) in message and "python3 dev.py setup" in message


@pytest.mark.parametrize("guard,target", TARGETS, ids=[target for _, target in TARGETS])
def test_a_changed_function_trips_the_guard(guard, target, monkeypatch):
    module, _, qualname = target.partition(":")
    owner = importlib.import_module(module)
    *path, name = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)

    def changed(*args, **kwargs):  # a release that rewrote the function
        return None

    monkeypatch.setattr(owner, name, changed)
    with pytest.raises(compat.CompatError) as caught:
        compat.check(guard)
    message = str(caught.value)
    assert target in message and guard.library in message and compat.installed_version(guard.library) in message


def test_a_missing_function_trips_the_guard(monkeypatch):
    monkeypatch.delattr(nbgrader.api.Gradebook, "close")
    with pytest.raises(compat.CompatError, match=r"nbgrader.api:Gradebook.close .*source hash missing"):
        compat.check(compat.GUARDS[0])


def test_a_grader_refuses_to_start_when_a_guard_trips(tmp_path, monkeypatch):
    from autograder.grading.grader import Grader

    monkeypatch.setattr(compat, "_VERIFIED", False)
    monkeypatch.setattr(compat, "installed_version", lambda library: "0.0.1")
    with pytest.raises(compat.CompatError, match=r"grading stopped: nbgrader 0.0.1 is installed"):
        Grader(tmp_path, "ch01", isolate=False)


def _bound():
    return {name: importlib.import_module(f"nbgrader.preprocessors.{name}").Gradebook
            for name in compat.GRADEBOOK_USERS}


def test_shared_gradebooks_apply_only_while_active_and_nest():
    assert set(_bound().values()) == {nbgrader.api.Gradebook}
    with compat.shared_gradebooks():
        with compat.shared_gradebooks():  # a second grading thread
            assert set(_bound().values()) == {compat._opened}
        assert set(_bound().values()) == {compat._opened}  # the first is still grading
    assert set(_bound().values()) == {nbgrader.api.Gradebook}


def test_shared_gradebooks_share_one_engine(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with compat.open_gradebook(db_url) as first, compat.open_gradebook(db_url) as second:
        assert first.engine is second.engine and isinstance(first, nbgrader.api.Gradebook)
    with compat.shared_gradebooks():
        from nbgrader.preprocessors import getgrades

        with getgrades.Gradebook(db_url) as opened:
            assert opened.engine is first.engine
        other = f"sqlite:///{tmp_path / 'other.db'}"
        with getgrades.Gradebook(other) as fresh:  # a URL never opened through compat: nbgrader's own
            assert type(fresh) is nbgrader.api.Gradebook


def test_cached_metadata_schema_applies_only_while_active_and_raises_as_jsonschema():
    import jsonschema
    from nbgrader.nbgraderformat import common

    schema = {"type": "object", "properties": {"points": {"type": "number"}}}
    with compat.cached_metadata_schema():
        assert isinstance(common.jsonschema, compat.CachedSchemaJsonschema)
        common.jsonschema.validate({"points": 2}, schema)
        with pytest.raises(jsonschema.ValidationError) as cached:
            common.jsonschema.validate({"points": "two"}, schema)
    assert common.jsonschema is jsonschema
    with pytest.raises(jsonschema.ValidationError) as stock:
        jsonschema.validate({"points": "two"}, schema)
    assert str(cached.value) == str(stock.value)


def test_the_cli_says_why_grading_stopped(tmp_path, monkeypatch, capsys):
    from autograder.engines import cli

    # the class mode as far as it makes its Grader (what every grading mode does first)
    monkeypatch.setattr(cli, "_class", lambda args, root: cli._make_grader(args, root, args.assignment) and 0)
    monkeypatch.setattr(compat, "_VERIFIED", False)
    monkeypatch.setattr(compat, "installed_version", lambda library: "0.0.1")
    assert cli.main(["class", "ch01", "--course-root", str(tmp_path), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("course-autograde: grading stopped: nbgrader 0.0.1 is installed") and "Traceback" not in err


def test_feedback_steps_accept_display_data_priority_without_a_patch():
    """nbconvert's HTML exporter configures ``NbConvertBase.display_data_priority``; every nbgrader step the
    course runs in feedback (and the formgrader's view) takes it as configuration through a subclass
    (``compat.NbGraderStep``), and nbgrader's own base class is left as nbgrader declares it."""
    from nbgrader.preprocessors import NbGraderPreprocessor
    from traitlets.utils.importstring import import_item

    from autograder.grading.feedback import FEEDBACK_PREPROCESSORS
    from autograder.grading.handgrading import ShowMarkingGuide

    steps = [import_item(name) for name in FEEDBACK_PREPROCESSORS] + [ShowMarkingGuide]
    nbgrader_steps = [step for step in steps if issubclass(step, NbGraderPreprocessor)]
    assert len(nbgrader_steps) >= 6
    for step in nbgrader_steps:
        assert "display_data_priority" in step.class_traits(config=True), step
    assert "display_data_priority" not in NbGraderPreprocessor.class_traits(config=True)
    import nbgrader.preprocessors as nbgrader_steps_module

    assert import_item("autograder.grading.feedback.GetGrades").__mro__[1] is nbgrader_steps_module.GetGrades


def test_feedback_html_is_validated_once_by_nbconverts_own_setting():
    """No private nbconvert method is replaced: the exporter validates once, after its last step."""
    from nbconvert.exporters.exporter import Exporter

    from autograder.grading.feedback import _exporter

    exporter = _exporter()
    assert exporter.optimistic_validation is True
    assert "_validate_preprocessor" not in vars(exporter) and type(exporter)._validate_preprocessor is \
        Exporter._validate_preprocessor

import pytest


@pytest.fixture(autouse=True)
def nobody_by_default(monkeypatch, tmp_path):
    """No student identity leaks in from the machine running the tests (hub user, laptop setting,
    the Unix account running them)."""
    from course.assess import variants

    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    monkeypatch.delenv("COURSE_STUDENT", raising=False)
    monkeypatch.setattr(variants, "student_file", lambda: tmp_path / "no-student-file")
    monkeypatch.setattr(variants, "unix_student", lambda uid=None: None)

"""Who a kernel grades as when nothing names the student: the Unix user, as nbgrader's exchange records it."""

from __future__ import annotations

import pwd

import nbformat
from nbformat.v4 import new_output

from course.assess import checks, variants
from course.assess.variants import current_student, unix_student


def test_precedence_grading_folder_hub_setting_then_unix_user():
    env = {"JUPYTERHUB_USER": "hubuser", "COURSE_STUDENT": "laptop"}
    grading = "/c/autograded/ada/ch00_ring_allreduce"
    assert current_student(grading, env, unix_user="carol") == ("ada", "nbgrader grading folder")
    assert current_student("/home/carol", env, unix_user="carol") == ("hubuser", "JupyterHub user")
    assert current_student("/home/carol", {"COURSE_STUDENT": "laptop"}, unix_user="carol") == ("laptop", "COURSE_STUDENT")
    assert current_student("/home/carol", {}, unix_user="carol") == ("carol", "Unix user")
    assert current_student("/home/carol", {}, unix_user=None) == (None, "nobody")
    # the autograder's sandbox sets COURSE_STUDENT to the graded student: it beats the account running it
    assert current_student("/tmp/scratch", {"COURSE_STUDENT": "ada"}, unix_user="grader") == ("ada", "COURSE_STUDENT")


def test_saved_course_student_beats_the_unix_user_and_the_unix_user_beats_nobody(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(variants, "unix_student", lambda uid=None: "carol")
    assert current_student() == ("carol", "Unix user")
    variants.save_student("ada")  # student_file points into tmp_path (conftest)
    assert current_student() == ("ada", "course student setting")


def _account(name, uid):
    return pwd.struct_passwd((name, "x", uid, uid, "", f"/home/{name}", "/bin/sh"))


def test_unix_student_is_the_login_name_of_a_person_account(monkeypatch):
    accounts = {1001: _account("carol", 1001), 0: _account("root", 0), 100: _account("_apt", 100),
                65534: _account("nobody", 65534)}

    def getpwuid(uid):
        if uid not in accounts:
            raise KeyError(uid)
        return accounts[uid]

    monkeypatch.setattr(pwd, "getpwuid", getpwuid)
    monkeypatch.setattr(variants, "_first_login_uid", lambda: 1000)
    assert unix_student(1001) == "carol"
    assert unix_student(0) is None          # root: an instructor or a container, never a student
    assert unix_student(100) is None        # a system account
    assert unix_student(65534) is None      # nobody
    assert unix_student(4_000_000) is None  # a sandbox uid with no account


def test_whoami_says_the_id_where_it_came_from_and_how_to_change_it(monkeypatch, capsys):
    monkeypatch.setattr(variants, "unix_student", lambda uid=None: "carol")
    checks.whoami("ch02_gradient_accumulation")
    out = capsys.readouterr().out
    assert "numbers for student 'carol'" in out
    assert "Unix user" in out and "nbgrader records when you submit" in out
    assert "course student <your nbgrader id>" in out


def test_feedback_drops_check_outputs_computed_for_another_students_id(monkeypatch, capsys):
    from course.notebook_api.feedback import insert_derivations

    monkeypatch.setattr(variants, "unix_student", lambda uid=None: "grader")
    checks.whoami("ch02_gradient_accumulation")  # a kernel that ran as another account
    printed = capsys.readouterr().out
    nb = nbformat.read("release/ch02_gradient_accumulation/ch02_gradient_accumulation.ipynb", 4)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    by_id["ch02_setup"].outputs = [new_output("stream", name="stdout", text=printed)]
    by_id["ch02_ex2_1_check"].outputs = [new_output("stream", name="stdout", text="\u2718 not yet\n")]
    insert_derivations(nb, "ada")
    assert "not yet" not in by_id["ch02_ex2_1_check"].outputs[0]["text"]
    assert "without your student id" in by_id["ch02_ex2_1_check"].outputs[0]["text"]


def test_whoami_in_the_grading_run_does_not_tell_the_student_to_unset_the_graders_variable(monkeypatch, capsys):
    """The autograder's kernel sets COURSE_STUDENT itself; its setup-cell line is in the student's feedback."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.setenv("COURSE_STUDENT", "ada")
    checks.whoami("ch02_gradient_accumulation")
    out = capsys.readouterr().out
    assert "numbers for student 'ada'" in out and "grading run" in out  # feedback still reads the id
    assert "COURSE_STUDENT" not in out and "restart the kernel" not in out


def test_a_student_sees_and_sets_their_id_from_the_notebook(monkeypatch, tmp_path, capsys):
    """Issue 48: no terminal needed. `student()` shows the id and where it comes from; `student('ada')` or the
    panel's box saves it (as `course student ada` does); a stronger source (the hub login) is said, not overridden."""
    from course.notebook_api import student

    monkeypatch.setattr(variants, "student_file", lambda: tmp_path / ".course" / "student")
    for name in ("JUPYTERHUB_USER", "COURSE_STUDENT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(variants, "unix_student", lambda uid=None: None)
    monkeypatch.chdir(tmp_path)
    panel = student()
    assert "No student id is set" in panel.status.value and not panel.save.disabled
    panel.box.value = "ada"
    panel.save.click()  # what the button does in the browser
    assert (tmp_path / ".course" / "student").read_text().strip() == "ada"
    assert "Restart the kernel" in panel.message.value
    assert variants.current_student() == ("ada", "course student setting")
    assert "You are <b>ada</b>" in panel.status.value
    panel.box.value = "not an id!"
    panel.save.click()
    assert "student must be" in panel.message.value  # a clear line, no traceback
    student("grace")
    assert "Saved 'grace'" in capsys.readouterr().out and variants.current_student()[0] == "grace"
    monkeypatch.setenv("JUPYTERHUB_USER", "bob")
    hub = student("mallory")
    assert hub.save.disabled and "hub login" in hub.status.value
    assert (tmp_path / ".course" / "student").read_text().strip() == "grace"  # nothing saved over the hub's id

"""The CI templates parse, and the commands they run, run here as their matrix, merge to the single-run grades.

Each job starts from a fresh copy of the course repository (as a CI checkout does); the merge job
gets each shard's folder as the templates' artifacts deliver it (GitHub: ``shards/shard-K/``,
GitLab: ``shards/K/``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from autograder.engines import ci_template

from . import attacks
from .course_dir import (CHAPTER, ELSEWHERE, RENAMED, ROOT, make_course, make_renamed_course, release, solution, submit,
                         with_first_answer, with_wrong_first_answer)

slow = pytest.mark.slow
#: nbgrader's default folder names, named as a folder of the course root (at the start of a path, or
#: under the Kubernetes volumes); ``shards/K/feedback`` and ``grades/<assignment>/feedback`` are the
#: grading runs' own layout, not nbgrader's folders
DEFAULT_FOLDER = re.compile(r"""(?:^|[\s"'=(])(?:/srv/course/|/opt/course/|/work/)?(source|release|submitted|autograded|feedback)\b""")

SHARDS = 2


def _bash(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _step(job: dict, step_id: str) -> str:
    return next(s for s in job["steps"] if s.get("id") == step_id)["run"]


@pytest.fixture(scope="module")
def ci(tmp_path_factory):
    base = tmp_path_factory.mktemp("ci")
    repo = make_course(base / "repo")  # the instructor's course repository
    ada = solution(repo, student="ada")
    submit(repo, "ada", ada)
    submit(repo, "bob", with_wrong_first_answer(solution(repo, student="bob")))
    submit(repo, "cy", ada)  # copied
    submit(repo, "dee", raw=b"{not a notebook")
    submit(repo, "eve")  # no notebook
    submit(repo, "fay", with_first_answer(release(repo), attacks.MONKEYPATCH))
    proc = subprocess.run([sys.executable, "-m", "autograder", "ci-template", "--shards", str(SHARDS), "--out",
                           str(repo)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    github = yaml.safe_load((repo / ".github" / "workflows" / "grade.yml").read_text())
    gitlab = yaml.safe_load((repo / ".gitlab-ci.yml").read_text())
    # the pipeline's variables, with what GitHub fills in (inputs, run id) given here
    env = dict(os.environ, **{k: str(v) for k, v in github["env"].items()})
    env.update(ASSIGNMENT=CHAPTER, SUBMISSIONS="", SEED="3", VENV=sys.prefix,
               PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    matrix = github["jobs"]["grade"]["strategy"]["matrix"]["shard"]
    for shard in matrix:  # one fresh checkout per matrix job
        job = shutil.copytree(repo, base / f"job{shard}", symlinks=True)
        _bash(_step(github["jobs"]["grade"], "grade"), job, dict(env, SHARD=str(shard)))
    merged = {}
    for engine, layout in (("github", "shards/shard-{k}"), ("gitlab", "shards/{k}")):
        job = shutil.copytree(repo, base / f"merge-{engine}", symlinks=True)
        for shard in matrix:
            shutil.copytree(base / f"job{shard}" / "shards" / str(shard), job / layout.format(k=shard))
        script = (_step(github["jobs"]["merge"], "merge") if engine == "github"
                  else gitlab["merge"]["script"][0])
        _bash(script, job, env)
        merged[engine] = job / "grades" / CHAPTER
    single = shutil.copytree(repo, base / "single", symlinks=True)
    _bash(f'"$VENV/bin/course-autograde" class {CHAPTER} submitted --seed 3 --workers 2 $SANDBOX --no-progress '
          f'--out one && "$VENV/bin/course-autograde" canvas one/grades.json --out one/canvas.csv', single, env)
    return {"github": github, "gitlab": gitlab, "matrix": matrix, "merged": merged, "single": single}


def _students(folder: Path):
    rows = json.loads((folder / "grades.json").read_text())["students"]
    for row in rows:
        row.pop("seconds"), row.pop("phases")  # wall times differ from run to run
    return rows


def _feedback(folder: Path):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.html"))


@slow
def test_templates_parse_and_name_the_same_scripts(ci):
    github, gitlab = ci["github"], ci["gitlab"]
    assert ci["matrix"] == list(range(1, SHARDS + 1)) and gitlab["grade"]["parallel"] == SHARDS
    assert _step(github["jobs"]["grade"], "grade").strip() == ci_template.GRADE.strip()
    assert _step(github["jobs"]["merge"], "merge").strip() == ci_template.MERGE.strip()
    assert gitlab["grade"]["script"][1].strip() == ci_template.GRADE.strip()
    assert gitlab["merge"]["script"][0].strip() == ci_template.MERGE.strip()
    assert gitlab["default"]["before_script"][0].strip() == ci_template.SETUP.strip()
    assert _step(github["jobs"]["grade"], "setup").strip() == ci_template.SETUP.strip()
    # the one install recipe, with the grading set; dev.py install ends with pip check (tests/test_dev_environment.py)
    assert ci_template.SETUP.splitlines()[-1] == 'python3 dev.py install grading "$VENV" --editable'
    assert "bubblewrap" in ci_template.SETUP and "pip install" not in ci_template.SETUP
    assert github["jobs"]["merge"]["needs"] == "grade" and gitlab["merge"]["needs"] == ["grade"]
    # the sandbox is every route's default: the templates ask for nothing, and never for the retired flag
    assert github["env"]["SANDBOX"] == gitlab["variables"]["SANDBOX"] == ""
    written = ci_template.github_workflow(SHARDS) + ci_template.gitlab_ci(SHARDS)
    assert "--require-sandbox" not in written and "--allow-unsandboxed grades with rlimits only" in written


@slow
def test_matrix_merges_to_the_single_run(ci):
    one = ci["single"] / "one"
    whole = _students(one)
    assert [r["student"] for r in whole] == ["ada", "bob", "cy", "dee", "eve", "fay"]
    for engine, grades in ci["merged"].items():
        assert _students(grades) == whole, engine
        assert (grades / "grades.csv").read_text() == (one / "grades.csv").read_text()
        assert (grades / "canvas.csv").read_text() == (one / "canvas.csv").read_text()
        assert _feedback(grades / "feedback") == _feedback(ci["single"] / "feedback")
    rows = {r["student"]: r for r in whole}
    assert rows["ada"]["score"] == 8.0 and rows["fay"]["score"] == 0 and rows["cy"]["score"] < 8.0
    assert _feedback(ci["single"] / "feedback")  # honest and wrong work got feedback


@slow
def test_shards_split_the_class(ci):
    sizes = [len(_students(ci["single"].parent / f"job{k}" / "shards" / str(k))) for k in ci["matrix"]]
    assert sum(sizes) == 6 and all(sizes)


def test_shards_must_be_sensible(tmp_path):
    with pytest.raises(ValueError, match="shards"):
        ci_template.write_templates(tmp_path, 0)


def test_the_templates_are_written_by_a_yaml_library():
    """GitHub's trigger key ``on`` stays the string ``on`` for a YAML 1.1 reader (PyYAML reads a bare ``on``
    as true), and the header comments say what wrote the file and how to run it."""
    for text in (ci_template.github_workflow(2), ci_template.gitlab_ci(2)):
        assert text.startswith("# Written by `course-autograde ci-template --shards 2`")
        assert "&id" not in text and "*id" not in text  # no anchors: each job reads whole
    github = yaml.safe_load(ci_template.github_workflow(2))
    assert "on" in github and True not in github
    assert list(github["on"]["workflow_dispatch"]["inputs"]) == ["assignment", "submissions"]


# -- a course whose nbgrader_config.py renames nbgrader's folders and sets a root of another machine ----------

K8S = ROOT / "hub" / "k8s"


def _k8s_job(name: str, kind: str = "Job") -> dict:
    return next(d for d in yaml.safe_load_all((K8S / name).read_text()) if d and d["kind"] == kind)


def _k8s_script(job: dict) -> str:
    return job["spec"]["template"]["spec"]["containers"][0]["args"][0]


def _default_folders_named(script: str):
    """The lines of ``script`` (comments aside) that name one of nbgrader's folders by its default name."""
    return [line for line in script.splitlines()
            if not line.lstrip().startswith("#") and DEFAULT_FOLDER.search(line)]


def _fake_venv(base: Path) -> Path:
    """A ``$VENV`` whose ``nbgrader`` and ``course-autograde`` record where and how they were called
    (``course-autograde folders`` is the real one); ``class`` leaves one feedback page in the folder
    ``$FAKE_FEEDBACK``, as grading does in the course's feedback folder."""
    bin_dir = base / "fake-venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "nbgrader").write_text('#!/bin/sh\nprintf "%s: nbgrader %s\\n" "$PWD" "$*" >> "$CALLS"\n')
    (bin_dir / "course-autograde").write_text(
        '#!/bin/sh\nif [ "$1" = folders ]; then exec "$REAL_VENV/bin/course-autograde" "$@"; fi\n'
        'printf "%s: course-autograde %s\\n" "$PWD" "$*" >> "$CALLS"\n'
        'if [ "$1" = class ]; then mkdir -p "$FAKE_FEEDBACK/ada/$2" && echo page > "$FAKE_FEEDBACK/ada/$2/$2.html"; fi\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return bin_dir.parent


def _fake_env(base: Path, **more) -> dict:
    return dict(os.environ, VENV=str(_fake_venv(base)), REAL_VENV=sys.prefix, CALLS=str(base / "calls.log"),
                FAKE_FEEDBACK=RENAMED["feedback"], ASSIGNMENT=CHAPTER, SUBMISSIONS="", SHARDS="2", SEED="3",
                WORKERS="1", SANDBOX="", PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", **more)


def _calls(base: Path):
    return (base / "calls.log").read_text().splitlines()


NBGRADER_NAMES = {"source", "release", "submitted", "autograded", "feedback"}


def test_a_renamed_course_is_read_at_run_time(tmp_path):
    """The scripts ask the course for its folders (``course-autograde folders``) in the job's own checkout:
    the templates name none of nbgrader's default folders, so one written before a rename stays right."""
    course = make_renamed_course(tmp_path / "repo")
    assert ci_template.course_folders(course) == {"root": str(course.resolve()), **RENAMED}
    proc = subprocess.run([sys.executable, "-m", "autograder", "folders", "--shell", "--course-root", str(course)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"COURSE_ROOT={course.resolve()}", "COURSE_SOURCE=teacher_src",
                                        "COURSE_RELEASE=handout", "COURSE_SUBMITTED=handins",
                                        "COURSE_AUTOGRADED=marked", "COURSE_FEEDBACK=returned"]
    paths = ci_template.write_templates(course, SHARDS)
    github, gitlab = (yaml.safe_load(paths[k].read_text()) for k in ("github", "gitlab"))
    scripts = {"github grade": _step(github["jobs"]["grade"], "grade"),
               "github merge": _step(github["jobs"]["merge"], "merge"),
               "gitlab": "\n".join(gitlab["grade"]["script"] + gitlab["merge"]["script"]),
               "k8s grade": _k8s_script(_k8s_job("grade-job.yaml")),
               "k8s merge": _k8s_script(_k8s_job("merge-job.yaml")),
               "k8s storage": _k8s_script(_k8s_job("storage.yaml"))}
    for where, script in scripts.items():
        assert _default_folders_named(script) == [], where
    assert github["on"]["workflow_dispatch"]["inputs"]["submissions"]["default"] == ""
    assert gitlab["variables"]["SUBMISSIONS"] == ""
    k8s_env = {e["name"]: e["value"] for e in _k8s_job("grade-job.yaml")["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert k8s_env["SUBMISSIONS"] == ""
    # the same templates as for a course with nbgrader's names: nothing of the course is baked in
    plain = ci_template.write_templates(tmp_path / "plain", SHARDS)
    assert [plain[k].read_text() for k in paths] == [paths[k].read_text() for k in paths]


def test_old_scripts_named_the_default_folders():
    """The check above can fail: the scripts before this change named ``feedback/``, ``/srv/course/source``."""
    old_grade = 'if [ -d feedback ]; then cp -R feedback/. "shards/$SHARD/feedback/"; fi'
    old_pod = 'cp -R /srv/course/nbgrader_config.py /srv/course/source /srv/course/release "/srv/course/$SUBMISSIONS" .'
    assert _default_folders_named(old_grade) == [old_grade] and _default_folders_named(old_pod) == [old_pod]
    assert _default_folders_named('mkdir -p "grades/$ASSIGNMENT/feedback" shards/*/feedback') == []


def test_scripts_run_in_a_renamed_course(tmp_path):
    """GRADE in a checkout of the renamed course, the Kubernetes pod's script against a course volume and its
    storage init against an image, with nbgrader and course-autograde recording their calls: nbgrader is told
    the checkout is the root (not the instructor's machine's), ``class`` grades ``handins/``, the feedback
    copied is ``returned/``'s, and no folder of nbgrader's default names appears."""
    course = make_renamed_course(tmp_path / "repo")
    submit(course, "ada", raw=b"{}", submitted=RENAMED["submitted"])
    env = _fake_env(tmp_path)
    # a CI job: a fresh checkout
    job = shutil.copytree(course, tmp_path / "job1")
    _bash(ci_template.GRADE, job, dict(env, SHARD="1"))
    nbgrader, grading = _calls(tmp_path)
    assert nbgrader == (f"{job}: nbgrader generate_assignment {CHAPTER} --force --log-level=ERROR "
                        f"--CourseDirectory.root={job.resolve()}")
    assert grading.startswith(f"{job}: course-autograde class {CHAPTER} handins --shard 1/2 --seed 3 ")
    assert (job / "shards" / "1" / "feedback" / "ada" / CHAPTER / f"{CHAPTER}.html").read_text() == "page\n"
    assert not NBGRADER_NAMES & {p.name for p in job.iterdir()}
    # a Kubernetes grading pod: the course volume at /srv/course, its own disk at /work
    volume, work = shutil.copytree(course, tmp_path / "volume"), tmp_path / "work"
    work.mkdir()
    (tmp_path / "calls.log").unlink()
    pod = _k8s_script(_k8s_job("grade-job.yaml")).replace("/srv/course", str(volume)).replace("cd /work", f"cd {work}")
    _bash(pod, tmp_path, dict(env, JOB_COMPLETION_INDEX="1"))
    assert {p.name for p in work.iterdir()} == {"nbgrader_config.py", "teacher_src", "handout", "handins", "returned",
                                                "shards"}
    assert (work / "handins" / "ada" / CHAPTER / f"{CHAPTER}.ipynb").read_bytes() == b"{}"
    assert _calls(tmp_path)[1].startswith(f"{work}: course-autograde class {CHAPTER} handins --shard 2/2 ")
    assert (volume / "shards" / "2" / "feedback" / "ada" / CHAPTER / f"{CHAPTER}.html").is_file()
    # the storage init: the course root starts as the image's, with the folders its config names
    image, fresh = shutil.copytree(course, tmp_path / "image"), tmp_path / "fresh-volume"
    fresh.mkdir()
    init = _k8s_script(_k8s_job("storage.yaml"))
    block = init[init.index("if [ ! -e /srv/course"):init.index("\nfi\n") + 3]
    _bash(block.replace("/opt/course", str(image)).replace("/srv/course", str(fresh)), tmp_path, env)
    assert {p.name for p in fresh.iterdir()} == {"nbgrader_config.py", "teacher_src", "handout"}


def test_a_folder_outside_the_course_is_refused_when_writing_the_templates(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.feedback_directory = '/tmp/fb'\n")
    proc = subprocess.run([sys.executable, "-m", "autograder", "ci-template", "--shards", "2", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "feedback_directory" in proc.stderr and "outside the course root" in proc.stderr
    assert not (tmp_path / ".gitlab-ci.yml").exists()


@slow
def test_matrix_grades_a_renamed_course(tmp_path):
    """The templates' scripts, really grading: two shards and the merge in checkouts of a course whose folders
    are renamed and whose root names another machine; the grades and feedback of the class, and nothing
    written under nbgrader's default names or at that root."""
    course = make_renamed_course(tmp_path / "repo")
    submit(course, "ada", solution(course, student="ada", source=RENAMED["source"]), submitted=RENAMED["submitted"])
    submit(course, "bob", with_wrong_first_answer(solution(course, student="bob", source=RENAMED["source"])),
           submitted=RENAMED["submitted"])
    env = dict(os.environ, ASSIGNMENT=CHAPTER, SUBMISSIONS="", SHARDS=str(SHARDS), SEED="3", WORKERS="1",
               SANDBOX="", VENV=sys.prefix, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    merge = shutil.copytree(course, tmp_path / "merge")
    for shard in range(1, SHARDS + 1):
        job = shutil.copytree(course, tmp_path / f"job{shard}")
        _bash(ci_template.GRADE, job, dict(env, SHARD=str(shard)))
        assert not NBGRADER_NAMES & {p.name for p in job.iterdir()}, sorted(p.name for p in job.iterdir())
        assert (job / RENAMED["autograded"]).is_dir() or not json.loads(
            (job / "shards" / str(shard) / "grades.json").read_text())["students"]
        shutil.copytree(job / "shards" / str(shard), merge / "shards" / str(shard))
    _bash(ci_template.MERGE, merge, env)
    grades = merge / "grades" / CHAPTER
    rows = {r["student"]: r for r in json.loads((grades / "grades.json").read_text())["students"]}
    assert rows["ada"]["score"] == 8.0 and 0 < rows["bob"]["score"] < 8.0, rows
    assert sorted(p.parts[-3] for p in (grades / "feedback").rglob("*.html")) == ["ada", "bob"]
    assert (grades / "canvas.csv").is_file() and not Path(ELSEWHERE).exists()

"""The CI templates parse, and the commands they run, run here as their matrix, merge to the single-run grades.

Each job starts from a fresh copy of the course repository (as a CI checkout does); the merge job
gets each shard's folder as the templates' artifacts deliver it (GitHub: ``shards/shard-K/``,
GitLab: ``shards/K/``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from autograder.engines import ci_template

from . import attacks
from .course_dir import CHAPTER, make_course, release, solution, submit, with_first_answer, with_wrong_first_answer

pytestmark = pytest.mark.slow

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
    env.update(ASSIGNMENT=CHAPTER, SUBMISSIONS="submitted", SEED="3", VENV=sys.prefix,
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

"""``course-autograde ci-template --shards N``: a CI matrix that grades a class in N shards.

It writes two files for the instructor's course repository (this repository's layout: the
root is the nbgrader course root, submissions in ``submitted/`` or another folder):

* ``.github/workflows/grade.yml``: GitHub Actions, started by hand (``workflow_dispatch``) with
  the assignment; a ``grade`` job with ``strategy.matrix.shard: [1..N]``, then ``merge``;
* ``.gitlab-ci.yml``: GitLab CI, a ``grade`` job with ``parallel: N`` (``CI_NODE_INDEX`` /
  ``CI_NODE_TOTAL``), then ``merge``.

Both run the same shell scripts (:data:`SETUP`, :data:`GRADE`, :data:`MERGE`), written once
here: every shard builds the gradebook, grades its share of the class
(``course-autograde class --shard K/N``, students assigned by a hash of their id) with one
probe seed per pipeline, and keeps ``grades.json``, ``grades.csv`` and its students' feedback;
the merge job joins them with ``course-autograde merge`` into one ``grades.csv``/``grades.json``,
writes the Canvas CSV (``course-autograde canvas``) and gathers all feedback. The scripts read
only environment variables (``ASSIGNMENT``, ``SUBMISSIONS``, ``SHARD``, ``SHARDS``, ``SEED``,
``WORKERS``, ``SANDBOX``, ``VENV``), so a test runs them as they are, locally, as a matrix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import yaml

#: the environment of grading, made by the course's one install recipe (``dev.py install``, as every
#: environment is): the grading set (``requirements/grading.txt``, hash-checked, ``--no-deps``), the
#: course in editable mode, then ``pip check``
SETUP = """\
sudo -n true 2>/dev/null && SUDO=sudo || SUDO=
$SUDO apt-get update -q && $SUDO apt-get install -y -q bubblewrap util-linux
# Ubuntu 24.04 restricts unprivileged user namespaces, which bubblewrap needs
$SUDO sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 || true
python3 dev.py install grading "$VENV" --editable
"""

#: one shard: gradebook, grading, this shard's feedback kept beside its grades
GRADE = """\
# limits per submission: c.GradingLimits in nbgrader_config.py (course-autograde reads it; a flag overrides)
"$VENV/bin/nbgrader" generate_assignment "$ASSIGNMENT" --force --log-level=ERROR
"$VENV/bin/course-autograde" class "$ASSIGNMENT" "$SUBMISSIONS" --shard "$SHARD/$SHARDS" --seed "$SEED" --workers "$WORKERS" $SANDBOX --no-progress --out "shards/$SHARD"
mkdir -p "shards/$SHARD/feedback"
if [ -d feedback ]; then cp -R feedback/. "shards/$SHARD/feedback/"; fi
"""

#: all shards into the assignment's own grades/<assignment>/ (grades.csv, grades.json, canvas.csv, feedback/),
#: where refresh, report and term find it, as after `course-autograde class`
MERGE = """\
"$VENV/bin/course-autograde" merge shards/*/grades.json --out "grades/$ASSIGNMENT"
"$VENV/bin/course-autograde" canvas "$ASSIGNMENT" --out "grades/$ASSIGNMENT/canvas.csv"
mkdir -p "grades/$ASSIGNMENT/feedback"
for folder in shards/*/feedback; do cp -R "$folder"/. "grades/$ASSIGNMENT/feedback/"; done
"""

#: timeout of one shard's job, minutes (a class of 2,000 in 8 shards: ~250 submissions each)
JOB_MINUTES = 180


class _Dumper(yaml.SafeDumper):
    """YAML as a person writes it: keys in the order given, each script a literal block, no anchors."""

    def ignore_aliases(self, data) -> bool:
        return True


def _string(dumper, text: str):
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_Dumper.add_representer(str, _string)


def _yaml(header: str, document: dict) -> str:
    """``header`` (comment lines) and ``document`` in YAML, written by a YAML library."""
    comments = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comments + yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=1000, default_flow_style=False)


def _header(shards: int, *more: str) -> str:
    return "\n".join((f"Written by `course-autograde ci-template --shards {shards}`. Grades one assignment in "
                       f"{shards} shards", "in parallel, then merges them into grades/<assignment>/ (grades.csv, "
                       "grades.json, canvas.csv, feedback/).", *more))


_SETTINGS_HELP = ("SEED: one probe seed for every shard of a run, so the class is graded on the same inputs.",
                  "WORKERS: parallel sandboxes per job, the runner's cores.",
                  "SANDBOX: empty, grading refuses to run student code without bubblewrap (every route's default);",
                  "--allow-unsandboxed grades with rlimits only, student code in the runner's account (UNSAFE).")


def github_workflow(shards: int) -> str:
    """``.github/workflows/grade.yml`` for ``shards`` parallel jobs."""
    checkout = [{"uses": "actions/checkout@v4"},
                {"uses": "actions/setup-python@v5", "with": {"python-version": "3.11"}}]
    grade = {
        "runs-on": "ubuntu-24.04", "timeout-minutes": JOB_MINUTES,
        "strategy": {"fail-fast": False, "matrix": {"shard": list(range(1, shards + 1))}},
        "env": {"SHARD": "${{ matrix.shard }}"},
        "steps": [*checkout,
                  {"id": "setup", "name": "the grading environment (requirements/grading.txt) and the sandbox", "run": SETUP},
                  {"id": "grade", "name": f"grade shard ${{{{ matrix.shard }}}} of {shards}", "run": GRADE},
                  {"uses": "actions/upload-artifact@v4",
                   "with": {"name": "shard-${{ matrix.shard }}", "path": "shards/${{ matrix.shard }}/",
                            "retention-days": 30}}]}
    merge = {
        "needs": "grade", "runs-on": "ubuntu-24.04", "env": {"SHARD": "0"},
        "steps": [*checkout,
                  {"id": "setup", "name": "the grading environment (requirements/grading.txt)", "run": SETUP},
                  {"uses": "actions/download-artifact@v4", "with": {"pattern": "shard-*", "path": "shards"}},
                  {"id": "merge", "name": "one grades.csv, Canvas CSV and feedback", "run": MERGE},
                  {"uses": "actions/upload-artifact@v4",
                   "with": {"name": "grades", "path": "grades/", "retention-days": 90}}]}
    document = {
        "name": "grade",
        "on": {"workflow_dispatch": {"inputs": {
            "assignment": {"description": "assignment to grade (a folder of source/)", "required": True},
            "submissions": {"description": "folder of submissions (nbgrader's submitted/ or <student>.ipynb/.zip "
                                           "files)", "default": "submitted"}}}},
        "env": {"ASSIGNMENT": "${{ inputs.assignment }}", "SUBMISSIONS": "${{ inputs.submissions }}",
                "SHARDS": str(shards), "SEED": "${{ github.run_id }}", "WORKERS": "2",
                "SANDBOX": "", "VENV": ".venv"},
        "jobs": {"grade": grade, "merge": merge}}
    return _yaml(_header(shards, "Start it from the Actions tab (Run workflow). Submissions are a folder in this "
                                 "repository.", *_SETTINGS_HELP, "GitHub's standard Linux runners have 2 or 4 cores."),
                 document)


def gitlab_ci(shards: int) -> str:
    """``.gitlab-ci.yml`` for ``shards`` parallel jobs (runners need bubblewrap's user namespaces:
    a privileged Docker runner or a shell runner)."""
    only_with_assignment = [{"if": '$ASSIGNMENT != ""'}]
    document = {
        "stages": ["grade", "merge"],
        "variables": {"ASSIGNMENT": "", "SUBMISSIONS": "submitted", "SANDBOX": "", "VENV": ".venv",
                      "SEED": "$CI_PIPELINE_ID", "WORKERS": "2"},
        "default": {"image": "python:3.11-bookworm", "before_script": [SETUP]},
        "grade": {"stage": "grade", "parallel": shards, "timeout": f"{JOB_MINUTES} minutes",
                  "rules": only_with_assignment,
                  "script": ['export SHARD="$CI_NODE_INDEX" SHARDS="$CI_NODE_TOTAL"', GRADE],
                  "artifacts": {"paths": ["shards/"], "expire_in": "30 days"}},
        "merge": {"stage": "merge", "needs": ["grade"], "rules": only_with_assignment, "script": [MERGE],
                  "artifacts": {"paths": ["grades/"], "expire_in": "90 days"}}}
    return _yaml(_header(shards, "Run a pipeline with ASSIGNMENT set (CI/CD > Run pipeline). The runner must let "
                                 "bubblewrap create", 'namespaces (a privileged Docker runner, or a shell runner); '
                                 'without them nothing is graded.', *_SETTINGS_HELP), document)


def write_templates(out_dir, shards: int) -> Dict[str, Path]:
    """Write both files under ``out_dir`` (a course repository's root); return their paths."""
    if type(shards) is not int or not 1 <= shards <= 256:
        raise ValueError(f"shards must be a whole number in 1..256, got {shards!r}")
    out = Path(out_dir)
    paths = {"github": out / ".github" / "workflows" / "grade.yml", "gitlab": out / ".gitlab-ci.yml"}
    paths["github"].parent.mkdir(parents=True, exist_ok=True)
    paths["github"].write_text(github_workflow(shards))
    paths["gitlab"].write_text(gitlab_ci(shards))
    return paths


def add_parser(sub) -> None:
    p = sub.add_parser("ci-template", help="write a GitHub Actions workflow and a GitLab CI file that "
                                           "grade N shards in parallel and merge them")
    p.add_argument("--shards", type=int, required=True, help="parallel grading jobs")
    p.add_argument("--out", default=".", help="the course repository's root (default: here)")
    p.set_defaults(run=_cli)


def _cli(args) -> int:
    paths = write_templates(args.out, args.shards)
    print(f"wrote {paths['github']} and {paths['gitlab']} ({args.shards} shards)")
    return 0

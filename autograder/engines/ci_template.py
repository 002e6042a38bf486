"""``course-autograde ci-template --shards N``: a CI matrix that grades a class in N shards.

It writes two files for the instructor's course repository (this repository's layout: the
root is the nbgrader course root, beside its ``nbgrader_config.py``):

* ``.github/workflows/grade.yml``: GitHub Actions, started by hand (``workflow_dispatch``) with
  the assignment; a ``grade`` job with ``strategy.matrix.shard: [1..N]``, then ``merge``;
* ``.gitlab-ci.yml``: GitLab CI, a ``grade`` job with ``parallel: N`` (``CI_NODE_INDEX`` /
  ``CI_NODE_TOTAL``), then ``merge``.

Both run the same shell scripts (:data:`SETUP`, :data:`GRADE`, :data:`MERGE`), written once
here, and so do the Kubernetes grading Jobs (``hub/k8s/``): every shard builds the gradebook, grades
its share of the class (``course-autograde class --shard K/N``, students assigned by a hash of their
id) with one probe seed per pipeline, and keeps ``grades.json``, ``grades.csv`` and its students'
feedback; the merge job joins them with ``course-autograde merge`` into one ``grades.csv``/``grades.json``,
writes the Canvas CSV (``course-autograde canvas``) and gathers all feedback.

The scripts name none of nbgrader's folders. The course's ``nbgrader_config.py`` may rename them
(``c.CourseDirectory.source_directory``, ``submitted_directory``, ``autograded_directory``,
``feedback_directory``, ``directory_structure``) and may set ``c.CourseDirectory.root`` to a folder of the
instructor's own machine; a job runs elsewhere, on a checkout made later, so it asks the course there,
at run time: ``course-autograde folders --shell`` (:func:`folder_variables`, through
:class:`~autograder.grading.course_settings.CourseSettings`, the loader every route uses) prints
``COURSE_ROOT`` (the checkout, which nbgrader is told too) and ``COURSE_SOURCE``, ``COURSE_RELEASE``,
``COURSE_SUBMITTED``, ``COURSE_AUTOGRADED``, ``COURSE_FEEDBACK`` (relative to it). A template written
before the instructor renamed a folder stays right. Otherwise the scripts read only environment
variables (``ASSIGNMENT``, ``SUBMISSIONS``, ``SHARD``, ``SHARDS``, ``SEED``, ``WORKERS``, ``SANDBOX``,
``VENV``), so a test runs them as they are, locally, as a matrix.
"""

from __future__ import annotations

import sys
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

#: the course's folders as its nbgrader_config.py names them, asked in the job's own checkout
#: (:func:`folder_variables`); a failure stops the job (an assignment fails under ``set -e``, ``eval "$(...)"`` would not)
FOLDERS = """\
# the course's folders, as its nbgrader_config.py names them (c.CourseDirectory.*), asked here at run time:
# COURSE_ROOT (this folder) and COURSE_SOURCE, COURSE_RELEASE, COURSE_SUBMITTED, COURSE_AUTOGRADED, COURSE_FEEDBACK
COURSE_FOLDERS="$("$VENV/bin/course-autograde" folders --shell)"
eval "$COURSE_FOLDERS"
"""

#: one shard: gradebook, grading, this shard's feedback kept beside its grades
GRADE = FOLDERS + """\
# limits per submission: c.GradingLimits in nbgrader_config.py (course-autograde reads it; a flag overrides)
"$VENV/bin/nbgrader" generate_assignment "$ASSIGNMENT" --force --log-level=ERROR --CourseDirectory.root="$COURSE_ROOT"
"$VENV/bin/course-autograde" class "$ASSIGNMENT" "${SUBMISSIONS:-$COURSE_SUBMITTED}" --shard "$SHARD/$SHARDS" --seed "$SEED" --workers "$WORKERS" $SANDBOX --no-progress --out "shards/$SHARD"
mkdir -p "shards/$SHARD/feedback"
if [ -d "$COURSE_FEEDBACK" ]; then cp -R "$COURSE_FEEDBACK"/. "shards/$SHARD/feedback/"; fi
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


#: what ``SUBMISSIONS`` may be (GitHub's input, GitLab's variable)
SUBMISSIONS_HELP = ("folder of submissions; empty: the course's own, as nbgrader_config.py names it "
                    "(c.CourseDirectory.submitted_directory); else <student>/<assignment>/ folders or "
                    "<student>.ipynb/.zip files")

_SETTINGS_HELP = (SUBMISSIONS_HELP.replace("folder of submissions; empty", "SUBMISSIONS: empty", 1) + ".",
                  "Folders: the scripts ask the course (course-autograde folders) at run time, so renaming one in "
                  "nbgrader_config.py needs no new template.",
                  "SEED: one probe seed for every shard of a run, so the class is graded on the same inputs.",
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
            "submissions": {"description": SUBMISSIONS_HELP, "required": False, "default": ""}}}},
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
        "variables": {"ASSIGNMENT": "", "SUBMISSIONS": "", "SANDBOX": "", "VENV": ".venv",
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


def course_folders(course_root) -> Dict[str, str]:
    """``{"root": the course root, absolute; "source": its folder relative to the root, "release", "submitted",
    "autograded", "feedback"}`` as the course's ``nbgrader_config.py`` names them, read by
    :class:`~autograder.grading.course_settings.CourseSettings` (the root is where the file is, whatever
    ``c.CourseDirectory.root`` says on the instructor's machine). ``ValueError`` when a folder lies
    outside the course root: a job elsewhere would not have it."""
    from ..grading.course_settings import CourseSettings

    course = CourseSettings(course_root)
    return {"root": str(course.root), **course.layout()}


def folder_variables(course_root) -> str:
    """:func:`course_folders` as shell assignments (``course-autograde folders --shell``): ``COURSE_ROOT``,
    ``COURSE_SOURCE``, ``COURSE_RELEASE``, ``COURSE_SUBMITTED``, ``COURSE_AUTOGRADED``, ``COURSE_FEEDBACK``,
    each value quoted for the shell."""
    return _as_shell(course_folders(course_root))


def _as_shell(folders: Dict[str, str]) -> str:
    import shlex

    return "".join(f"COURSE_{name.upper()}={shlex.quote(value)}\n" for name, value in folders.items())


def write_templates(out_dir, shards: int) -> Dict[str, Path]:
    """Write both files under ``out_dir`` (a course repository's root); return their paths. A course there
    whose folders a job could not find (:func:`folder_variables`) is refused now, not in the job."""
    if type(shards) is not int or not 1 <= shards <= 256:
        raise ValueError(f"shards must be a whole number in 1..256, got {shards!r}")
    out = Path(out_dir)
    folder_variables(out)
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
    p = sub.add_parser("folders", help="the course's nbgrader folders, as its nbgrader_config.py names them "
                                       "(what the CI and Kubernetes grading scripts ask)")
    p.add_argument("--course-root", default=".", help="nbgrader course root (default: here)")
    p.add_argument("--shell", action="store_true",
                   help="as shell assignments (COURSE_ROOT, COURSE_SOURCE, COURSE_RELEASE, COURSE_SUBMITTED, "
                        "COURSE_AUTOGRADED, COURSE_FEEDBACK) for eval")
    p.set_defaults(run=_folders)


def _cli(args) -> int:
    try:
        paths = write_templates(args.out, args.shards)
    except ValueError as exc:
        print(f"course-autograde: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {paths['github']} and {paths['gitlab']} ({args.shards} shards)")
    return 0


def _folders(args) -> int:
    try:
        found = course_folders(args.course_root)
    except ValueError as exc:
        print(f"course-autograde: {exc}", file=sys.stderr)
        return 2
    if args.shell:
        sys.stdout.write(_as_shell(found))
    else:
        for name, value in found.items():
            print(f"{name:<11} {value}")
    return 0

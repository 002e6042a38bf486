"""hub/k8s/: what can be checked without Kubernetes (this machine has none).

The manifests and Helm values parse; the image installs exactly the course set with dev.py install; the grading
Jobs run the CI templates' scripts (which test_ci_template.py runs as a matrix); the hub's role
hook gives instructors and students what hub/setup.py gives them; and the grading pod's script,
with the volume paths pointed at folders here, grades and merges a small class.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from autograder.engines import ci_template

from .course_dir import CHAPTER, ROOT, make_course, solution, submit, with_wrong_first_answer

K8S = ROOT / "hub" / "k8s"


def _docs(name: str):
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def _by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def _grade_job():
    return _by_kind(_docs("grade-job.yaml"), "Job")[0]


def _script(job) -> str:
    return job["spec"]["template"]["spec"]["containers"][0]["args"][0]


def _env(job) -> dict:
    return {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_every_manifest_parses():
    kinds = {name: [d["kind"] for d in _docs(name)]
             for name in ("storage.yaml", "grade-job.yaml", "merge-job.yaml")}
    assert kinds == {"storage.yaml": ["PersistentVolumeClaim", "PersistentVolumeClaim", "Job"],
                     "grade-job.yaml": ["Job", "NetworkPolicy"], "merge-job.yaml": ["Job"]}
    values = yaml.safe_load((K8S / "values.yaml").read_text())
    assert {"hub", "singleuser"} <= set(values)


def test_image_installs_exactly_the_pins():
    """The image is made by the one install recipe (dev.py install): the course set, first alone (a cached
    layer), then with the package; nothing else installs anything."""
    text = (K8S / "Dockerfile").read_text()
    assert "pip install" not in text
    runs = [c.strip() for c in re.split(r"&&|\n", text.replace("\\\n", " ")) if "dev.py install" in c and not c.startswith("#")]
    assert runs == ["RUN python /opt/course/dev.py install course /opt/venv --no-project",
                    "RUN python /opt/course/dev.py install course /opt/venv --project /opt/course"]
    assert "COPY requirements /opt/course/requirements" in text and "COPY dev.py /opt/course/dev.py" in text
    assert text.index("--no-project") < text.index("COPY course ")  # the lock's layer does not change with the code
    base = re.search(r"^FROM python:(\d+)\.(\d+)", text, re.M)
    assert (int(base[1]), int(base[2])) == sys.version_info[:2]  # the Python the pins are tested on


def test_one_image_and_the_shared_volumes():
    values = yaml.safe_load((K8S / "values.yaml").read_text())
    image = f"{values['singleuser']['image']['name']}:{values['singleuser']['image']['tag']}"
    pods = [_grade_job(), _docs("merge-job.yaml")[0], _by_kind(_docs("storage.yaml"), "Job")[0]]
    assert {c["image"] for job in pods for c in job["spec"]["template"]["spec"]["containers"]} == {image}
    claims = {d["metadata"]["name"]: d for d in _by_kind(_docs("storage.yaml"), "PersistentVolumeClaim")}
    assert all(c["spec"]["accessModes"] == ["ReadWriteMany"] for c in claims.values())
    storage = values["singleuser"]["storage"]
    exchange = storage["extraVolumes"][0]["persistentVolumeClaim"]["claimName"]
    assert exchange in claims
    assert storage["extraVolumeMounts"][0]["mountPath"] == values["singleuser"]["extraEnv"]["NBGRADER_EXCHANGE"]
    for job in pods[:2]:
        volumes = job["spec"]["template"]["spec"]["volumes"]
        assert any(v.get("persistentVolumeClaim", {}).get("claimName") == "course-root" for v in volumes)


def test_grading_pods_are_limited_and_offline():
    job = _grade_job()
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    env = _env(job)
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == int(env["SHARDS"])
    assert spec["activeDeadlineSeconds"] > 0
    limits = pod["containers"][0]["resources"]["limits"]
    assert {"cpu", "memory"} <= set(limits) and int(limits["cpu"]) == int(env["WORKERS"])
    assert pod["automountServiceAccountToken"] is False and env["SANDBOX"] == ""
    policy = _by_kind(_docs("grade-job.yaml"), "NetworkPolicy")[0]["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= job["spec"]["template"]["metadata"]["labels"].items()
    assert policy["policyTypes"] == ["Ingress", "Egress"] and policy["ingress"] == policy["egress"] == []


def test_jobs_run_the_ci_scripts():
    assert ci_template.GRADE in _script(_grade_job())
    assert ci_template.MERGE in _script(_docs("merge-job.yaml")[0])
    # what the script reads from the pod's environment: not SHARD (the script's first line makes it), nor what
    # it assigns itself (the course's folders, `course-autograde folders --shell`)
    assigned = set(re.findall(r"^(\w+)=", ci_template.GRADE, re.M)) | {
        f"COURSE_{name.upper()}" for name in ci_template.course_folders(ROOT)}
    used = set(re.findall(r"\$\{?(\w+)", ci_template.GRADE)) - {"SHARD"} - assigned
    assert used <= set(_env(_grade_job())) and "SUBMISSIONS" in used


def _run_hook(name: str, groups=(), admin=False):
    values = yaml.safe_load((K8S / "values.yaml").read_text())
    config = types.SimpleNamespace(KubeSpawner=types.SimpleNamespace())
    exec(values["hub"]["extraConfig"]["course-roles"], {"c": config})
    user = types.SimpleNamespace(name=name, admin=admin, groups=[types.SimpleNamespace(name=g) for g in groups])
    spawner = types.SimpleNamespace(user=user, environment={}, volumes=[], volume_mounts=[])
    config.KubeSpawner.pre_spawn_hook(spawner)
    return spawner


def test_role_hook_and_role_config(tmp_path):
    sys.path.insert(0, str(K8S))
    try:
        import role_config
    finally:
        sys.path.remove(str(K8S))
    role_config.write(tmp_path)
    teacher = _run_hook("instructor", ["formgrade-distributed-training"])
    alice, bob = _run_hook("alice", ["nbgrader-distributed-training"]), _run_hook("bob")
    for spawner in (teacher, alice):
        folder = Path(spawner.environment["JUPYTER_CONFIG_PATH"].replace("/etc/course", str(tmp_path)))
        server = json.loads((folder / "jupyter_server_config.json").read_text())
        formgrader = server["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"]
        assert formgrader is (spawner is teacher)
    assert [m["mountPath"] for m in teacher.volume_mounts] == ["/srv/course"] and not alice.volume_mounts
    assert len({teacher.uid, alice.uid, bob.uid}) == 3 and min(teacher.uid, alice.uid, bob.uid) >= 100000


@pytest.mark.slow
def test_grading_pod_script_grades_and_merges_here(tmp_path):
    """The Job's script with /srv/course and /work pointed at folders here: two pods, then the merge."""
    course = make_course(tmp_path / "srv-course")
    submit(course, "ada", solution(course, student="ada"))
    submit(course, "bob", with_wrong_first_answer(solution(course, student="bob")))
    job = _grade_job()
    env = dict(os.environ, **_env(job))
    env.update(SHARDS="2", VENV=sys.prefix, WORKERS="1", ASSIGNMENT=CHAPTER,
               PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    for index in (0, 1):
        work = tmp_path / f"pod{index}"
        work.mkdir()
        script = _script(job).replace("/srv/course", str(course)).replace("cd /work", f"cd {work}")
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=dict(env, JOB_COMPLETION_INDEX=str(index)),
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
    merge = _docs("merge-job.yaml")[0]
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", _script(merge)], cwd=course, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in json.loads((course / "grades" / CHAPTER / "grades.json").read_text())["students"]}
    assert rows["ada"]["score"] == 8.0 and 0 < rows["bob"]["score"] < 8.0
    assert (course / "grades" / CHAPTER / "canvas.csv").is_file()
    assert sorted(p.parts[-3] for p in (course / "grades" / CHAPTER / "feedback").rglob("*.html")) == ["ada", "bob"]

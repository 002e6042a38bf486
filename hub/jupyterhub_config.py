"""JupyterHub for the course, as ``python3 dev.py hub`` starts it (settings come from its environment).

Authenticator: JupyterHub's shared-password ``DummyAuthenticator`` with an allow-list of the
course's people. Why not PAM: the people are real Unix accounts (the spawner needs them), but
giving them system passwords on a development machine or a CI runner would open SSH/su logins;
one random hub-only password (printed at start, kept in the state folder) opens nothing else.
A real deployment swaps this line for its single sign-on (OAuthenticator, LTI).
"""

import json
import os
import pwd
import sys

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)
env = os.environ
state = env["COURSE_HUB_STATE"]
venv_bin = env["COURSE_HUB_VENV_BIN"]
instructors = set(env["COURSE_HUB_INSTRUCTORS"].split(","))
students = set(env["COURSE_HUB_STUDENTS"].split(","))

c.JupyterHub.bind_url = f"http://{env.get('COURSE_HUB_IP', '127.0.0.1')}:{env['COURSE_HUB_PORT']}"
c.JupyterHub.hub_port = int(env["COURSE_HUB_INTERNAL_PORT"])
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env['COURSE_HUB_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.command = [env["COURSE_HUB_PROXY"]]
c.ConfigurableHTTPProxy.pid_file = os.path.join(state, "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{os.path.join(state, 'jupyterhub.sqlite')}"
c.JupyterHub.cookie_secret_file = os.path.join(state, "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(state, "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every user's server

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = env["COURSE_HUB_PASSWORD"]
c.Authenticator.allowed_users = instructors | students
c.Authenticator.admin_users = instructors
# Courses kept apart: nbgrader's JupyterHubAuthPlugin (switched on in hub/nbgrader_env_config.py)
# shows a student only the courses whose hub group "nbgrader-<course_id>" holds them.
courses = json.loads(env["COURSE_HUB_COURSES"])
c.JupyterHub.load_groups = {f"nbgrader-{course}": {"users": members} for course, members in courses.items()}
# the instructor's Formgrader lists the exchange through the same plugin: "formgrade-<course>" groups
c.JupyterHub.load_groups.update({f"formgrade-{course}": {"users": sorted(instructors)} for course in courses})
# each server's token may read group membership: a student's only their own, the instructor's (admin) anyone's;
# an instructor's may also list the hub's services, which nbgrader's Course List asks for (403 without it)
SERVER_TOKEN_SCOPES = ["users:activity!user", "access:servers!server", "read:users:groups", "read:users:name"]


def server_token_scopes(spawner):
    return SERVER_TOKEN_SCOPES + (["list:services", "read:services"] if spawner.user.name in instructors else [])


c.Spawner.server_token_scopes = server_token_scopes

# Every person's server and kernel run from the course's environment, as their own Unix user.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [os.path.join(venv_bin, "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
# grading without bubblewrap only where whoever started the hub allowed it (autograder/isolation/unsandboxed.py):
# the instructor's formgrader and the on-submit service follow the same rule as the command line
_UNSANDBOXED = {k: env[k] for k in ("COURSE_ALLOW_UNSANDBOXED",) if k in env}
c.Spawner.environment = {
    "PATH": venv_bin + os.pathsep + "/usr/local/bin:/usr/bin:/bin",
    "NBGRADER_EXCHANGE": env["COURSE_HUB_EXCHANGE"],  # read by hub/nbgrader_env_config.py
    "LANG": "C.UTF-8",
    "COURSE_HUB_GROUPS": "1",  # hub/nbgrader_env_config.py: course membership from hub groups
    **_UNSANDBOXED,
}
c.Spawner.start_timeout = 180  # a busy 2-core machine starts JupyterLab slowly
c.Spawner.http_timeout = 180
# A terminal is a login shell when the server has no tty (as under a spawner), and /etc/profile then sets
# PATH again without the course's environment: `course student NAME`, which the setup cells tell students
# to run, was "command not found". A plain interactive shell keeps the PATH above.
TERMINAL_SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
c.Spawner.args = ["--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=",
                  f"--ServerApp.terminado_settings=shell_command={TERMINAL_SHELL}"]

# Grading on submit (autograder/engines/on_submit.py): a service that runs as the (first) instructor in their
# course root, watches the exchange and grades each submission of an assignment the instructor opted
# in (`course-autograde on-submit enable NAME`) in the course's sandbox, then releases its feedback
# (at once for a chapter, held for a lab). Nothing is graded until an assignment is opted in.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository: hub.setup
from hub.setup import COURSE_ID  # noqa: E402 (importable once the repository is on sys.path)

_grader = sorted(instructors)[0]
_grader_home = pwd.getpwnam(_grader).pw_dir
c.JupyterHub.services = [{
    "name": "autograde-on-submit",
    "user": _grader,
    "cwd": os.path.join(_grader_home, COURSE_ID),
    "command": [os.path.join(venv_bin, "course-autograde"), "on-submit", "run", "--interval", "5",
                "--course-root", os.path.join(_grader_home, COURSE_ID)],
    "environment": {"PATH": venv_bin + os.pathsep + "/usr/local/bin:/usr/bin:/bin", "HOME": _grader_home,
                    "USER": _grader, "LOGNAME": _grader, "LANG": "C.UTF-8",
                    "NBGRADER_EXCHANGE": env["COURSE_HUB_EXCHANGE"], **_UNSANDBOXED},
}]

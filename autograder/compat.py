"""Every place the autograder relies on the inside of nbgrader, jupyter_client, nbclient or jsonschema.

Each item is either an explicit subclass passed through the library's own configuration (a
``client_class`` trait, a kernel manager subclass, a preprocessor subclass) or a patch that a
context manager applies only while grading runs and undoes afterwards. None of them is a public
API of its library, so each is **guarded**: :data:`GUARDS` names the library, the versions the
item was checked against (:data:`CHECKED`) and a hash of the source of every function it
overrides, re-implements or reaches into. :func:`require` (called when a :class:`~autograder.grading.grader.Grader`
is made) stops grading with :class:`CompatError` when the installed version or one of those
sources differs, saying which library, which version and what to do.

Upgrading one of these libraries on purpose: ``python3 dev.py lock --upgrade`` (or a new pin in
``requirements/grading.in``, then ``python3 dev.py lock``), then ``.venv/bin/python -m autograder.compat`` lists each guard with the
installed version and the current hashes; read each changed function against the code below,
adjust it, then put the new version in :data:`CHECKED` and the printed hashes in :data:`GUARDS`,
and run the autograder tests.

What remains a patch, and why (``docs/authors/maintaining.md`` says the same):

* :func:`shared_gradebooks` rebinds ``Gradebook`` in five nbgrader preprocessor modules while a
  submission is graded: they construct ``Gradebook(db_url)`` themselves (no trait or hook
  chooses the class), and each construction costs a dozen schema round trips;
* :func:`cached_metadata_schema` swaps the ``jsonschema`` module nbgrader's metadata validator
  looks up, while ``CheckCellMetadata`` runs: it calls ``jsonschema.validate`` per cell, which
  re-checks the schema against its meta-schema each time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.metadata
import inspect
import json
import threading
import time
from dataclasses import dataclass
from queue import Empty
from typing import Dict, Iterator, Optional, Tuple

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from nbgrader.preprocessors import NbGraderPreprocessor, SaveAutoGrades
from traitlets import List

#: the installed versions each library's items were read and tested against (requirements/grading.txt)
CHECKED: Dict[str, Tuple[str, ...]] = {
    "nbgrader": ("0.9.6",),
    "jupyter_client": ("8.10.0",),
    "nbclient": ("0.11.0",),
    "jsonschema": ("4.26.0",),
}


class CompatError(RuntimeError):
    """The installed library is not the one an autograder item was checked against."""


@dataclass(frozen=True)
class Guard:
    """One item of this module: what it relies on in ``library`` and the sources it was checked against."""

    name: str
    library: str
    #: ``module:qualname`` -> first 16 hex digits of the sha256 of its source
    sources: Tuple[Tuple[str, str], ...]
    why: str


GUARDS: Tuple[Guard, ...] = (
    Guard("shared gradebooks", "nbgrader", (
        ("nbgrader.api:Gradebook.__init__", "c60c420276e8355e"),
        ("nbgrader.api:Gradebook.close", "089cf56cf4f8a224"),
        ("nbgrader.preprocessors.getgrades:GetGrades.preprocess", "50efe7eaf5aaab62"),
        ("nbgrader.preprocessors.latesubmissions:AssignLatePenalties.preprocess", "e4fa96a4c466680a"),
        ("nbgrader.preprocessors.overwritecells:OverwriteCells.preprocess", "3a94b453d8e53bee"),
        ("nbgrader.preprocessors.overwritekernelspec:OverwriteKernelspec.preprocess", "28cc17a228e741a2"),
    ), "SharedGradebook sets what Gradebook.__init__ sets; the preprocessors open Gradebook(db_url)"),
    Guard("cached metadata schema (nbgrader side)", "nbgrader", (
        ("nbgrader.nbgraderformat.common:BaseMetadataValidator.validate_cell", "e5f97f45a9aba510"),
    ), "validate_cell calls the module-level jsonschema.validate(instance, schema)"),
    Guard("cached metadata schema (jsonschema side)", "jsonschema", (
        ("jsonschema.validators:validate", "5bfea7e5f0f3dae0"),
    ), "CachedSchemaJsonschema.validate does what validate does, with the validator built once"),
    Guard("autograde into one transaction", "nbgrader", (
        ("nbgrader.preprocessors.saveautogrades:SaveAutoGrades.preprocess", "edef3c387d5c104a"),
        ("nbgrader.preprocessors.saveautogrades:SaveAutoGrades._add_score", "ee891a8fe3657ce7"),
        ("nbgrader.preprocessors.saveautogrades:SaveAutoGrades._add_comment", "31f0186fac9c23ec"),
    ), "SaveAutoGradesInto.preprocess_into is preprocess on a given gradebook whose commits flush"),
    Guard("quick kernel_info wait", "jupyter_client", (
        ("jupyter_client.client:KernelClient._async_wait_for_ready", "0d732ad86fea3115"),
        ("jupyter_client.client:KernelClient._handle_kernel_info_reply", "0ccf6064c6489923"),
    ), "QuickReadyClient.wait_for_ready is the stock loop with shorter waits"),
    Guard("kernel launch hooks", "jupyter_client", (
        ("jupyter_client.manager:KernelManager._async_launch_kernel", "5ba0dfe7cf7e85aa"),
        ("jupyter_client.manager:KernelManager._connect_control_socket", "a0c7c9b00269be1f"),
        ("jupyter_client.provisioning.local_provisioner:LocalProvisioner.launch_kernel", "5a5d3e639018fd53"),
        ("jupyter_client.connect:ConnectionFileMixin._reconcile_connection_info", "5392d13edc8b96ab"),
        # what the provisioner then does with an adopted process (autograder.isolation.warm.WarmProcess)
        ("jupyter_client.provisioning.local_provisioner:LocalProvisioner.poll", "12ca1197bc501486"),
        ("jupyter_client.provisioning.local_provisioner:LocalProvisioner.wait", "4f17103ed4cb9bd3"),
        ("jupyter_client.provisioning.local_provisioner:LocalProvisioner.send_signal", "66b39929d07b84e9"),
        ("jupyter_client.provisioning.local_provisioner:LocalProvisioner.kill", "1a9af1a2443a6bc4"),
        ("jupyter_client.provisioning.local_provisioner:LocalProvisioner.terminate", "f65bd4b412574919"),
        ("jupyter_client.provisioning.local_provisioner:LocalProvisioner.cleanup", "bbe4e1c870ac4c34"),
    ), "an adopted process is set on the provisioner as launch_kernel sets its own, and used as its own"),
    Guard("restore cells without the checksum warning", "nbgrader", (
        ("nbgrader.preprocessors.overwritecells:OverwriteCells.report_change", "8b9f15517d7bed91"),
    ), "RestoreCells.report_change drops the 'checksum' change only and passes every other to it"),
    Guard("notebook client budget", "nbclient", (
        ("nbclient.client:NotebookClient.output", "8ac7ba61fc598f51"),
        ("nbclient.client:NotebookClient.async_execute_cell", "366a0d406d758da2"),
        ("nbclient.client:NotebookClient.async_setup_kernel", "189461fd8c55187b"),
    ), "BudgetedClient overrides output and async_execute_cell; unregisters the atexit _cleanup_kernel"),
)


def installed_version(library: str) -> str:
    """The installed version of ``library`` (a distribution name), or ``"not installed"``."""
    try:
        return importlib.metadata.version(library)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def resolve(target: str):
    """The object named by ``module:qualname``."""
    module, _, qualname = target.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def source_hash(obj) -> str:
    """The first 16 hex digits of the sha256 of ``obj``'s source (what a guard compares)."""
    return hashlib.sha256(inspect.getsource(inspect.unwrap(obj)).encode()).hexdigest()[:16]


_UPGRADE_HELP = ("install the locked versions (`python3 dev.py setup` installs the lock, requirements/dev.txt), or, "
                 "if {library} was upgraded on purpose, read the changed code against autograder/compat.py, "
                 "adjust it, and record the new version and the hashes that `python -m autograder.compat` prints")


def current_hash(target: str) -> str:
    """The source hash of ``target`` as installed, or ``missing (<why>)`` where it cannot be read."""
    try:
        return source_hash(resolve(target))
    except (ImportError, AttributeError, TypeError, OSError) as exc:
        return f"missing ({type(exc).__name__})"


def check(guard: Guard) -> None:
    """Raise :class:`CompatError` unless ``guard``'s library is a checked version with unchanged sources."""
    version = installed_version(guard.library)
    checked = CHECKED[guard.library]
    help_ = _UPGRADE_HELP.format(library=guard.library)
    if version not in checked:
        raise CompatError(f"grading stopped: {guard.library} {version} is installed, but the autograder's "
                          f"{guard.name} was checked against {guard.library} {', '.join(checked)} only; {help_}")
    for target, expected in guard.sources:
        found = current_hash(target)
        if found != expected:
            raise CompatError(f"grading stopped: {target} of {guard.library} {version} is not the code the "
                              f"autograder's {guard.name} was checked against (source hash {found}, "
                              f"expected {expected}: {guard.why}); {help_}")


_VERIFIED = False


def require() -> None:
    """Check every guard once per process (a few milliseconds); raise :class:`CompatError` on the first that fails."""
    global _VERIFIED
    if not _VERIFIED:
        for guard in GUARDS:
            check(guard)
        _VERIFIED = True


# ---------------------------------------------------------------------------------------------
# nbgrader: one engine per gradebook, while grading
# ---------------------------------------------------------------------------------------------

#: nbgrader's preprocessor modules that open their own ``Gradebook(db_url)``
GRADEBOOK_USERS = ("getgrades", "latesubmissions", "overwritecells", "overwritekernelspec", "saveautogrades")
#: db_url -> (engine, session factory) every gradebook of that URL opened in this process shares
_ENGINES: Dict[str, tuple] = {}
_LOCK = threading.Lock()
_ACTIVE = {"gradebooks": 0, "schema": 0}
_SAVED: Dict[str, object] = {}


def _shared_class():
    import nbgrader.api
    from sqlalchemy.orm import scoped_session

    class SharedGradebook(nbgrader.api.Gradebook):
        """A ``Gradebook`` on the shared engine (what ``Gradebook.__init__`` sets); ``close`` ends its session only."""

        def __init__(self, engine, factory):
            self.engine = engine
            self.db = scoped_session(factory)
            self.course_id, self.authenticator = "default_course", None

        def close(self):
            self.db.remove()

    return SharedGradebook


def open_gradebook(db_url: str):
    """A gradebook of ``db_url`` on this process's shared engine (made on first use).

    nbgrader's constructor creates an engine, inspects the schema, runs ``create_all`` and checks
    the course each time, and a fresh engine compiles every query anew; a grade cost about a dozen
    of those. Tables and sessions are nbgrader's; connections are not pooled (``NullPool``), so
    nothing holds the file between uses.
    """
    import nbgrader.api
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker
    from sqlalchemy.pool import NullPool

    with _LOCK:
        if db_url not in _ENGINES:
            with nbgrader.api.Gradebook(db_url):  # once: tables, alembic version and course exist
                pass
            engine = create_engine(db_url, echo=False, future=True, poolclass=NullPool)
            # one session class: each sessionmaker() makes a new Session subclass, and SQLAlchemy's event
            # registry keeps every one of them, so per-gradebook ones slow every later session down
            _ENGINES[db_url] = (engine, sessionmaker(autoflush=True, bind=engine, future=True), _shared_class())
        engine, factory, shared = _ENGINES[db_url]
    return shared(engine, factory)


def _opened(db_url, *args, **kwargs):
    """What ``Gradebook(...)`` means inside nbgrader's preprocessors while :func:`shared_gradebooks` is active."""
    import nbgrader.api

    if db_url not in _ENGINES or args or kwargs:
        return nbgrader.api.Gradebook(db_url, *args, **kwargs)
    return open_gradebook(db_url)


@contextlib.contextmanager
def _while_active(key: str, apply, undo) -> Iterator[None]:
    """``apply()`` when the first user (in any thread) enters, ``undo()`` when the last leaves: a patch
    scoped to the code that needs it, however many grading threads need it at once."""
    with _LOCK:
        if _ACTIVE[key] == 0:
            apply()
        _ACTIVE[key] += 1
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE[key] -= 1
            if _ACTIVE[key] == 0:
                undo()


def shared_gradebooks():
    """While active (in any thread), nbgrader's preprocessors open gradebooks of a URL that
    :func:`open_gradebook` has opened on its shared engine; restored when the last user leaves."""
    import nbgrader.api

    def apply():
        for name in GRADEBOOK_USERS:
            module = importlib.import_module(f"nbgrader.preprocessors.{name}")
            if module.Gradebook is nbgrader.api.Gradebook:
                _SAVED[name] = module.Gradebook
                module.Gradebook = _opened

    def undo():
        for name in GRADEBOOK_USERS:
            if name in _SAVED:
                importlib.import_module(f"nbgrader.preprocessors.{name}").Gradebook = _SAVED.pop(name)

    return _while_active("gradebooks", apply, undo)


# ---------------------------------------------------------------------------------------------
# nbgrader + jsonschema: the cell-metadata schema checked once, while sanitizing
# ---------------------------------------------------------------------------------------------

class CachedSchemaJsonschema:
    """``jsonschema`` for nbgrader's cell-metadata checks (``CheckCellMetadata``, run on every
    submission): ``validate`` checks each schema against its meta-schema and builds its validator
    once, not once per cell (most of a submission's sanitizing time), and raises the same error
    (``best_match`` of the same validator's errors)."""

    def __init__(self, module):
        self._module = module
        self._validators: Dict[str, object] = {}

    def validate(self, instance, schema, cls=None, *args, **kwargs):
        if cls is not None or args or kwargs:
            return self._module.validate(instance, schema, cls, *args, **kwargs)
        key = json.dumps(schema, sort_keys=True)
        validator = self._validators.get(key)
        if validator is None:
            kind = self._module.validators.validator_for(schema)
            kind.check_schema(schema)
            validator = self._validators[key] = kind(schema)
        error = self._module.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error

    def __getattr__(self, name):
        return getattr(self._module, name)


_SCHEMA_PROXY: Optional[CachedSchemaJsonschema] = None


def cached_metadata_schema():
    """While active (in any thread), nbgrader's metadata validator uses :class:`CachedSchemaJsonschema`."""
    from nbgrader.nbgraderformat import common

    def apply():
        global _SCHEMA_PROXY
        if _SCHEMA_PROXY is None:
            _SCHEMA_PROXY = CachedSchemaJsonschema(common.jsonschema)
        common.jsonschema = _SCHEMA_PROXY

    def undo():
        common.jsonschema = _SCHEMA_PROXY._module

    return _while_active("schema", apply, undo)


# ---------------------------------------------------------------------------------------------
# nbgrader: SaveAutoGrades into the caller's transaction (a subclass, no patch)
# ---------------------------------------------------------------------------------------------

class _FlushOnCommit:
    """A gradebook whose session's ``commit`` only flushes, so that nbgrader's per-cell commits
    become one transaction that the caller commits."""

    class _Session:
        def __init__(self, session):
            self._session = session

        def commit(self):
            self._session.flush()

        def __getattr__(self, name):
            return getattr(self._session, name)

    def __init__(self, gb):
        self._gb = gb
        self.db = self._Session(gb.db)

    def __getattr__(self, name):
        return getattr(self._gb, name)


class SaveAutoGradesInto(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades`` writing into a gradebook the caller opened and will commit."""

    def preprocess_into(self, gradebook, nb, resources, *, notebook_id: str, assignment_id: str,
                        student_id: str, db_url: str):
        """``SaveAutoGrades.preprocess`` on ``gradebook``: its per-cell commits only flush."""
        self.notebook_id, self.assignment_id, self.student_id, self.db_url = (
            notebook_id, assignment_id, student_id, db_url)
        self.gradebook = _FlushOnCommit(gradebook)
        # the cells, as SaveAutoGrades.preprocess runs them, without its own Gradebook
        return super(SaveAutoGrades, self).preprocess(nb, resources)


# ---------------------------------------------------------------------------------------------
# jupyter_client: a quicker client and a kernel manager with launch hooks (subclasses)
# ---------------------------------------------------------------------------------------------

class QuickReadyClient(AsyncKernelClient):
    """jupyter_client's client, whose ``wait_for_ready`` polls in 50 ms steps, not 200 ms.

    The stock one waits 0.2 s for an IOPub message after each kernel_info reply (if the
    subscription was not in place yet, it asks again) and then drains IOPub until it has been
    quiet for 0.2 s: about 0.4 s of every kernel start. Leftover status messages of the
    kernel_info requests are harmless: nbclient reads only messages whose parent is the cell's
    own request. Passed by name through the manager's ``client_class`` trait.
    """

    async def wait_for_ready(self, timeout: Optional[float] = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                msg = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                pass
            else:
                if msg["msg_type"] == "kernel_info_reply":
                    try:  # IOPub subscribed: the kernel's status for this request came through
                        await self.iopub_channel.get_msg(timeout=0.05)
                    except Empty:
                        pass
                    else:
                        self._handle_kernel_info_reply(msg)
                        break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")
        while True:
            try:
                await self.iopub_channel.get_msg(timeout=0.02)
            except Empty:
                break


class HookedKernelManager(AsyncKernelManager):
    """``AsyncKernelManager`` whose launch a subclass shapes through two hooks, and whose control
    socket does not linger.

    ``_async_launch_kernel`` is the method jupyter_client's docstring says to override "to launch
    kernel subprocesses differently"; this is the one override of it, so the private names it
    touches (the provisioner's ``process``/``pid``/``pgid``, ``_reconcile_connection_info``) are
    here, guarded. A subclass implements :meth:`wrap_command` (the command to run instead) and
    may implement :meth:`adopt_process` (a process started some other way, with ``pid``).
    """

    launched_pid: Optional[int] = None  # kept after nbclient's clean-up drops the provisioner

    def wrap_command(self, kernel_cmd: list) -> list:
        return kernel_cmd

    def adopt_process(self, kernel_cmd: list):
        """A ``Popen``-like process already running the kernel, or None to launch ``wrap_command``'s."""
        return None

    def _connect_control_socket(self) -> None:
        # jupyter_client lingers 100 ms on close for the interrupt it sends before killing the
        # kernel; the kernel is killed with its sandbox anyway, so nothing waits for it
        super()._connect_control_socket()
        self._control_socket.linger = 0

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        process = self.adopt_process(list(kernel_cmd))
        if process is not None:
            self.provisioner.process, self.provisioner.pid, self.provisioner.pgid = process, process.pid, None
            self._reconcile_connection_info(self.provisioner.connection_info)
            return
        await super()._async_launch_kernel(self.wrap_command(list(kernel_cmd)), **kw)
        self.launched_pid = self.provisioner.pid


def main() -> int:
    """Print each guard's library, installed version and the current source hashes (for upgrading)."""
    failed = 0
    for guard in GUARDS:
        try:
            check(guard)
            state = "ok"
        except CompatError as exc:
            state, failed = f"FAILS: {exc}", failed + 1
        print(f"{guard.name}: {guard.library} {installed_version(guard.library)} "
              f"(checked: {', '.join(CHECKED[guard.library])}) {state}")
        for target, expected in guard.sources:
            found = current_hash(target)
            print(f'    ("{target}", "{found}"),' + ("" if found == expected else f"  # recorded {expected}"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())


# ---------------------------------------------------------------------------------------------
# nbgrader: quiet feedback and restored cells (subclasses, no patch)
# ---------------------------------------------------------------------------------------------


class NbGraderStep(NbGraderPreprocessor):
    """nbgrader's preprocessor base class that accepts ``display_data_priority`` as configuration (a
    subclass, no patch): the base of the course's own nbgrader steps.

    nbconvert's ``HTMLExporter`` configures ``NbConvertBase.display_data_priority`` for every
    preprocessor it makes; nbgrader's base class declares the trait again without the config tag, so
    traitlets warned "Config option `display_data_priority` not recognized" once per nbgrader step on
    every Generate Feedback. This class declares the same list, configurable. None of the feedback steps
    reads it, so accepting it changes nothing but the noise.
    """

    display_data_priority = List(list(NbGraderPreprocessor.class_traits()["display_data_priority"].default())
                                 ).tag(config=True)


def accepting_display_priority(step: type, module: str) -> type:
    """``step`` (an nbgrader step class, e.g. ``GetGrades``) as a subclass that also accepts
    ``display_data_priority`` (:class:`NbGraderStep`); configured by its own name as well
    (``c.GetGrades.*`` applies, traitlets reads every class of the MRO), defined in ``module``."""
    return type(step.__name__, (step, NbGraderStep), {"__doc__": step.__doc__, "__module__": module})


@functools.cache  # one class per process, not one per graded submission
def restore_cells_class():
    """nbgrader's ``OverwriteCells`` without its checksum warning (a subclass, no patch).

    Every graded cell of the course holds hidden tests, whose checksum nbgrader computes before
    clearing them (nbgrader #1961), so an honest submission drew one warning per graded cell. The cell
    is restored from the gradebook either way; a change a student made is reported by
    ``Grader._structure_notes``. Overrides ``report_change``, which is not public: guarded.
    """
    from nbgrader.preprocessors import OverwriteCells

    class RestoreCells(OverwriteCells):
        def report_change(self, name, attr, old, new):
            if attr != "checksum":
                super().report_change(name, attr, old, new)

    return RestoreCells

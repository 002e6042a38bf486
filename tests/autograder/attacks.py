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
    import course.exercises as ce, course.exercises.registry as reg
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

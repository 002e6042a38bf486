"""Every number a key reads is in its prompt, exactly as the key uses it (40 students, every workbook exercise)."""

from __future__ import annotations

import re

import pytest

from course.activities import EXERCISES
from course.assess.authoring import exact, exact_tex
from course.assess.spec import spec_for
from course.assess.variants import variant_of

STUDENTS = [f"student{i:02d}" for i in range(40)]
_SUPERSCRIPT = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b", "0123456789-")
_NUMBER = re.compile(r"(?<![\w.])(-?\d{1,3}(?:,\d{3})+|-?\d+(?:\.\d+)?)"
                     r"(?:\s*\u00d7\s*10([\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b]+))?"
                     r"(\s*%)?")

#: spec values a prompt states in words, not digits: (exercise, spec name) -> {value: words the prompt must hold}
WORDED = {
    ("1.1", "stage"): {0: "no ZeRO"},
    ("1.1", "dp"): None,  # with no ZeRO (stage 0) the per-GPU memory does not depend on dp: checked via stage
    ("5.6", "v"): {1: "no interleaving"},
    ("6.2", "bytes_per_element"): {2: "FP16"},
    ("9.7", "bytes_per_param"): {2: "FP16"},
    ("10.1", "shared"): {0: "no shared expert"},
}


def numbers_in(text):
    """Every number written in ``text``: plain, with thousands separators, ``a × 10ⁿ``; a percentage
    counts as itself and as a fraction."""
    found = []
    for match in _NUMBER.finditer(text):
        value = float(match.group(1).replace(",", ""))
        if match.group(2):
            value = float(f"{match.group(1)}e{match.group(2).translate(_SUPERSCRIPT)}")
        found.append(value)
        if match.group(3):
            found.append(value / 100)
    return found


class _Reads(dict):
    """A spec that remembers which names the key read."""

    def __init__(self, spec):
        super().__init__(spec)
        self.read = set()

    def __getitem__(self, name):
        self.read.add(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self.read.add(name)
        return super().get(name, default)


def _numeric_exercises():
    return [n for n, ex in sorted(EXERCISES.items())
            if ex.prompt is not None and any(p.value is not None for p in ex.parts)]


def test_numbers_in_reads_what_exact_writes():
    for x in (2.0 ** 20, 8e9, 1.75e11, 15.6e12, 65536.0, 0.35, 2 ** -14, 7, 100000):
        assert x in numbers_in(f"S = {exact(x)} here"), exact(x)
    assert numbers_in("at 33% MFU") == [33.0, 0.33]
    assert "e+" not in exact_tex(8e9) and "e+" not in exact(8e9)


@pytest.mark.parametrize("number", _numeric_exercises())
def test_every_number_the_key_reads_is_in_the_prompt_as_the_key_uses_it(number):
    ex = EXERCISES[number]
    missing = []
    for student in [None] + STUDENTS:
        spec = spec_for(ex, variant_of(ex.assignment, student))
        prompt = ex.prompt(spec)
        assert not re.search(r"\d(?:\.\d+)?e[+-]\d", re.sub(r"`[^`]*`", "", prompt)), prompt  # no 8e+09 in prose
        shown = numbers_in(re.sub(r"`[^`]*`", "", prompt))
        for part in ex.parts:
            if part.value is None:
                continue
            reads = _Reads(spec)
            part.value.key(reads)
            for name in sorted(reads.read):
                values = spec[name] if isinstance(spec[name], (list, tuple)) else [spec[name]]
                for value in values:
                    if isinstance(value, bool) or not isinstance(value, (int, float)):
                        continue
                    if (number, name) in WORDED:
                        words = (WORDED[(number, name)] or {}).get(value)
                        if WORDED[(number, name)] is None or (words and words in prompt):
                            continue
                    if value not in shown:
                        missing.append((student, name, value, prompt))
    assert not missing, f"{len(missing)} numbers the key reads are not in the prompt, first: {missing[0]}"


def test_no_derivation_writes_a_number_as_e_notation():
    """``2.78e+03 ms`` or ``1.2e+03 %`` in a worked derivation reads as maths gone wrong."""
    from course.assess.spec import derivation_markdown

    found = []
    for number, ex in sorted(EXERCISES.items()):
        for student in [None] + STUDENTS:
            text = re.sub(r"`[^`]*`", "", derivation_markdown(ex, variant_of(ex.assignment, student)))
            match = re.search(r".{0,30}\d(?:\.\d+)?e[+-]\d+", text)
            if match:
                found.append((number, student, match.group(0)))
    assert not found, found[:3]

"""``course``: the command line of the course package.

    course build-sources [name ...]      write source/<assignment>/ notebooks from the activity list
    course build-release [name ...]      nbgrader generate_assignment -> release/<name>/ (default: all in source/)
    course check-release [name ...]      regenerate in a temporary course dir; exit 1 if release/ is stale
    course exercises [name]              list the registry: grade_id, kind, points
    course derivations <name>            print the worked derivations of an assignment (course root only)
    course import-grades FILE [--student S]   put graded points into the design ledger (index progress)
    course variant <name> --student S    in a course root: a student's numbers, keys and derivations;
                                         elsewhere: your own prompts only (keys stay with the instructor)
    course student [ID]                  show who this machine is, or save ID as the laptop's student id
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[1]


def _all_assignments() -> List[str]:
    return sorted(p.name for p in (ROOT / "source").iterdir() if p.is_dir() and not p.name.startswith("."))


def _names(given: List[str]) -> List[str]:
    known = _all_assignments()
    for name in given:
        if name not in known:
            raise SystemExit(f"course: unknown assignment {name!r}; known: {', '.join(known)}")
    return given or known


def _listed(names: List[str]):
    """The listed activities named by ``names`` (assignment or prefix; all when empty)."""
    from course.activities import ACTIVITIES

    found = [a for a in ACTIVITIES if not names or a.name in names or a.prefix in names]
    unknown = set(names) - {a.name for a in found} - {a.prefix for a in found}
    if unknown:
        raise SystemExit(f"course: unknown activity {sorted(unknown)}; known: "
                         + ", ".join(a.name for a in ACTIVITIES))
    return found


def _release_options():
    from course.activities import ACTIVITIES

    return {a.name: a.release_options for a in ACTIVITIES}


def cmd_build_sources(args) -> int:
    from course.assess.notebook import write_sources

    for path in write_sources(_listed(args.chapters), ROOT):
        print(f"wrote {path.relative_to(ROOT)}")
    errata = _errata()
    if errata is not None:
        print(f"wrote {errata.relative_to(ROOT)} (the workbook's corrections)")
    return 0


def _errata():
    """Write every exercise's declared correction on the instructors' errata page (None: unchanged)."""
    from course.activities import SYLLABUS
    from course.assess.activity import Chapter
    from course.assess.authoring import write_errata

    path = ROOT / "notebooks" / "errata.ipynb"
    return path if write_errata(path, [a for a in SYLLABUS.activities if isinstance(a, Chapter)]) else None


def cmd_build_release(args) -> int:
    from course.assess.release import generate_release

    names = _names(args.names)
    generate_release(names, ROOT, options=_release_options())
    for name in names:
        print(f"released release/{name}/")
    return 0


def fresh_release(names: List[str], workdir: Path) -> Path:
    """Copy nbgrader_config.py and source/<names> to ``workdir`` and generate their release there."""
    from course.assess.release import generate_release

    shutil.copy(ROOT / "nbgrader_config.py", workdir / "nbgrader_config.py")
    for name in names:
        shutil.copytree(ROOT / "source" / name, workdir / "source" / name)
    generate_release(names, workdir, options=_release_options())
    return workdir


def cmd_check_release(args) -> int:
    from course.assess.release import release_differences

    names = _names(args.names)
    with tempfile.TemporaryDirectory() as tmp:
        stale = release_differences(names, fresh_release(names, Path(tmp)))
    if stale:
        print("release/ is out of date for: " + ", ".join(stale) + "\nrun: course build-release " + " ".join(stale))
        return 1
    print("release/ matches source/ for: " + ", ".join(names))
    return 0


def cmd_exercises(args) -> int:
    from course.notebook_api import REGISTRY

    for gid, part in sorted(REGISTRY.items()):
        if args.name and part.assignment != args.name:
            continue
        print(f"{gid:28s} {part.kind:8s} {part.points:4g}  {part.title}")
    return 0


def cmd_derivations(args) -> int:
    from course.activities import activity
    from course.assess.variants import instructor_root

    if instructor_root() is None:
        raise SystemExit(f"course: {KEYS_WITHHELD}.")

    try:
        listed = activity(args.name)
    except ValueError as exc:
        raise SystemExit(f"course: {exc}")
    for item in dict.fromkeys(cell.item for cell in listed.cells() if cell.item):
        text = listed.worked_markdown(item)
        if text:
            print(text + "\n")
    return 0


def cmd_import_grades(args) -> int:
    from course.notebook_api.mastery import import_grades

    recorded = import_grades(args.file, args.student)
    for key, entry in sorted(recorded.items()):
        print(f"{key}: {entry['points']:g} / {entry['max_points']:g}")
    if not recorded:
        print("no graded workbook exercises found in " + args.file)
    return 0


KEYS_WITHHELD = ("keys and worked answers are printed only in an instructor's course root (a folder with "
                 "source/ and gradebook.db or nbgrader_config.py beside it); here you see your own prompts")


def cmd_variant(args) -> int:
    """In a course root: ``--student``'s numbers, keys (and derivations). Elsewhere (a student's
    install): only the prompts of whoever this machine is, never another student's, never a key."""
    from course.activities import activity
    from course.assess.variants import current_student, instructor_root, variant_of, variants_on

    try:
        listed = activity(args.name)
    except ValueError as exc:
        raise SystemExit(f"course: {exc}")
    instructor = instructor_root() is not None
    student = args.student
    if not instructor:
        own, source = current_student()
        if student is not None and student != own:
            raise SystemExit(f"course: {KEYS_WITHHELD}, and only your own ({own!r}, from: {source}).")
        student = own
        if student is None:
            raise SystemExit("course: no student id: run `course student <your nbgrader id>` first")
    elif student is None:
        raise SystemExit("course: give --student ID")
    if args.derivations and not instructor:
        print(f"# --derivations ignored: {KEYS_WITHHELD}")
    variant = variant_of(args.name, student)
    state = "off for this assignment" if not variants_on(args.name) else f"variant {variant}"
    print(f"# {args.name} for student {student!r} ({state})\n")
    if not instructor:
        print(f"# {KEYS_WITHHELD}.\n")
    for line in listed.variant_report(variant, args.derivations and instructor, keys=instructor):
        print(line)
    return 0


def cmd_student(args) -> int:
    from course.assess.variants import current_student, save_student

    if args.id:
        print(f"saved {args.id!r} in {save_student(args.id)} (restart running kernels to use it)")
    student, source = current_student()
    print(f"student: {student!r} (from: {source})" if student else
          "no student id: set one with `course student <your nbgrader id>`")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("build-sources", help="write the source notebooks of the listed activities")
    p.add_argument("chapters", nargs="*", metavar="name")
    p.set_defaults(func=cmd_build_sources)
    for name, func, text in (("build-release", cmd_build_release, "generate release/ with nbgrader"),
                             ("check-release", cmd_check_release, "fail if release/ is out of date")):
        p = sub.add_parser(name, help=text)
        p.add_argument("names", nargs="*")
        p.set_defaults(func=func)
    p = sub.add_parser("exercises", help="list registered autograded parts")
    p.add_argument("name", nargs="?")
    p.set_defaults(func=cmd_exercises)
    p = sub.add_parser("derivations", help="print the worked derivations of an assignment")
    p.add_argument("name")
    p.set_defaults(func=cmd_derivations)
    p = sub.add_parser("import-grades", help="record graded points in the design ledger")
    p.add_argument("file")
    p.add_argument("--student")
    p.set_defaults(func=cmd_import_grades)
    p = sub.add_parser("variant", help="print a student's numbers, keys (and derivations) for an assignment")
    p.add_argument("name")
    p.add_argument("--student", help="the student (instructors; a student sees only their own prompts)")
    p.add_argument("--derivations", action="store_true", help="also print the worked derivations")
    p.set_defaults(func=cmd_variant)
    p = sub.add_parser("student", help="show or set this machine's student id (laptops)")
    p.add_argument("id", nargs="?")
    p.set_defaults(func=cmd_student)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

"""nbgrader's steps on the gradebook: sanitizing a submission, recording its scores, and its rows
(a part of :class:`~autograder.grading.grader.Grader`).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Dict, List

from .. import compat
from .submissions import Submission


if TYPE_CHECKING:  # the judge's record; imported where judging happens (the course package loads lazily)
    from course.assess.registry import Verdict


class GradebookSteps:
    """nbgrader's steps on the gradebook: a part of the grader (its methods use its settings)."""

    # ------------------------------------------------------------------ gradebook
    def _gradebook(self):
        return compat.open_gradebook(self.db_url)

    def _open_submission(self, sub: Submission) -> None:
        with self._gradebook() as gb:
            student = gb.update_or_create_student(sub.student)
            if student.first_name is None and student.last_name is None:  # the formgrader showed "None, None"
                from .submissions import display_name

                student.first_name, student.last_name = display_name(sub.student)
                gb.db.commit()
            if sub.timestamp:
                try:
                    gb.update_or_create_submission(self.assignment_name, sub.student,
                                                   timestamp=sub.timestamp)
                    return
                except Exception:
                    pass  # an unparsable timestamp.txt must not cost the student their grade
            gb.update_or_create_submission(self.assignment_name, sub.student)

    def _zero_all(self, student: str) -> None:
        """nbgrader's treatment of a missing notebook: every grade 0, nothing to grade by hand."""
        with self._gradebook() as gb:
            nb = gb.find_submission_notebook(self.assignment.notebook, self.assignment_name, student)
            for grade in nb.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
            gb.db.commit()

    def _read_grades(self, student: str) -> Dict[str, dict]:
        with self._gradebook() as gb:
            nb = gb.find_submission_notebook(self.assignment.notebook, self.assignment_name, student)
            return {g.name: {"auto": g.auto_score, "manual": g.manual_score, "score": float(g.score),
                             "max": float(g.max_score), "needs_manual": bool(g.needs_manual_grade)}
                    for g in nb.grades}

    # ------------------------------------------------------------------ steps
    def _structure_notes(self, nb) -> List[str]:
        """Student-readable notes on deleted, duplicated or re-labelled graded cells."""
        notes, seen = [], {}
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader")
            if not isinstance(meta, dict):
                continue
            gid = meta.get("grade_id")
            if gid not in self.assignment.known_ids:
                cell.metadata.pop("nbgrader", None)  # a student cannot add graded cells
                notes.append(f"a cell carried grading metadata that is not part of the assignment "
                             f"({str(gid)[:40]!r}); it was ignored")
                continue
            seen[gid] = seen.get(gid, 0) + 1
            info = self.assignment.grade_cells.get(gid)
            if info and (meta.get("points") != info["max_score"] or meta.get("grade") is not True):
                notes.append(f"the grading metadata of cell {gid} was changed; the original was restored")
        for gid, count in seen.items():
            if count > 1:
                notes.append(f"cell {gid} appears {count} times; only one copy counts")
        for gid in sorted(set(self.assignment.grade_cells) - set(seen)):
            checked = "your answer was still checked" if gid in self.registered else "it scores 0"
            notes.append(f"graded cell {gid} was missing from your notebook; {checked}")
        return notes

    def _sanitize(self, nb, student: str):
        from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, DeduplicateIds, OverwriteKernelspec

        _RestoreCells = compat.restore_cells_class()

        resources = self._resources(student)
        for pp in map(self.course.step, (ClearOutput, DeduplicateIds, OverwriteKernelspec)):
            nb, resources = pp.preprocess(nb, resources)
        for cell in nb.cells:  # DeduplicateIds leaves {} on the extra copies; nbgrader's checks reject {}
            if cell.get("metadata", {}).get("nbgrader") == {}:
                del cell.metadata["nbgrader"]
        try:  # put deleted graded cells back where nbgrader can
            restored, resources = self.course.step(_RestoreCells, add_missing_cells=True).preprocess(
                copy.deepcopy(nb), resources)
        except (KeyError, IndexError, ValueError):
            # nbgrader 0.9.6 fails when a neighbour of the deleted cell is gone too; registered parts
            # are judged from the harvest anyway, so grade without the missing cells
            restored, resources = self.course.step(_RestoreCells).preprocess(nb, resources)
        with compat.cached_metadata_schema():
            nb, resources = self.course.step(CheckCellMetadata).preprocess(restored, resources)
        return nb

    def _record(self, nb, student: str, verdicts: Dict[str, "Verdict"]) -> Dict[str, float]:
        """nbgrader's ``LimitOutput`` and ``SaveAutoGrades``, then the judged parts' scores over the
        in-kernel ones, in ONE gradebook transaction (``SaveAutoGrades`` alone commits once per
        graded cell); returns the in-kernel scores."""
        from nbgrader.preprocessors import AssignLatePenalties, LimitOutput

        resources = self._resources(student)
        nb, resources = self.course.step(LimitOutput).preprocess(nb, resources)
        with self._gradebook() as gb:
            nb, resources = self.course.step(compat.SaveAutoGradesInto).preprocess_into(
                gb, nb, resources, notebook_id=self.assignment.notebook, assignment_id=self.assignment_name,
                student_id=student, db_url=self.db_url)
            gb.db.flush()
            gb.db.expire_all()  # scores are computed by the database: read them again
            sub_nb = gb.find_submission_notebook(self.assignment.notebook, self.assignment_name, student)
            in_kernel = {grade.name: float(grade.score) for grade in sub_nb.grades}
            for grade in sub_nb.grades:
                if grade.name in verdicts:
                    grade.auto_score = verdicts[grade.name].score * float(grade.max_score)
                    grade.needs_manual_grade = False
            self._keep_or_reset_hand_grades(sub_nb)
            gb.db.commit()
        # nbgrader checks cell metadata again here because its kernel ran on the notebook itself; ours
        # only sends outputs back (merged in _merge_outputs), so the check in _sanitize still holds
        nb, resources = self.course.step(AssignLatePenalties).preprocess(nb, resources)
        return in_kernel

    def _keep_or_reset_hand_grades(self, sub_nb) -> None:
        """nbgrader's SaveAutoGrades marks every part a person already graded as needing grading
        again (and refresh would then drop its points): a hand grade stands, so it is not, unless
        the instructor asked to reset hand grades (then score and comment are cleared)."""
        comments = {c.name: c for c in sub_nb.comments}
        for grade in sub_nb.grades:
            if grade.manual_score is None:
                continue
            if self.reset_hand_grades:
                grade.manual_score = None
                if grade.name in comments:
                    comments[grade.name].manual_comment = None
                grade.needs_manual_grade = grade.auto_score is None
            else:
                grade.needs_manual_grade = False

    def _rows(self, student: str, status: str, reason: str, verdicts: Dict[str, "Verdict"],
              grades: Dict[str, dict]) -> dict:
        from course.assess import codes
        from course.notebook_api import REGISTRY

        parts = []
        for gid, info in sorted(self.assignment.grade_cells.items()):
            part = REGISTRY.get(gid)
            grade = grades.get(gid, {})
            checks, findings = [], None
            if gid in verdicts:
                part_status, why, code = "judged", verdicts[gid].reason, verdicts[gid].code
                findings = list(verdicts[gid].findings)
                # partial credit: each check's points and reason (never the hidden inputs or the key)
                checks = [{"check": c.name, "points": round(c.earned * info["max_score"], 6),
                           "max_points": round(c.share * info["max_score"], 6), "reason": c.reason,
                           "codes": list(c.codes)}
                          for c in verdicts[gid].checks]
            elif status in ("missing", "unreadable", "error"):
                part_status, why, code = "not_graded", "see the submission note", codes.NOT_GRADED
            elif grade.get("needs_manual"):
                part_status, why, code = "manual", "graded by hand by your instructor", codes.AWAITING_HAND_GRADE
            elif grade.get("manual") is not None:  # graded by a person before, kept
                part_status, why, code = "hand", "graded by hand", codes.GRADED_BY_HAND
            elif info["solution"] and grade.get("manual") is None and not grade.get("score"):
                # nbgrader scores a hand-graded answer left as released 0 and asks nobody to grade it
                part_status, why, code = "nbgrader", "not answered", codes.NOT_ANSWERED
            else:
                part_status = "nbgrader"
                passed = grade.get("score", 0) >= info["max_score"]
                why, code = ("passed", codes.CORRECT) if passed else ("the test cell failed", codes.TEST_CELL_FAILED)
            parts.append({
                "part": gid, "exercise": part.exercise if part else "", "kind": part.kind if part else "",
                "points": None if part_status == "manual" else round(grade.get("score", 0.0), 6),
                "max_points": info["max_score"], "status": part_status, "reason": why, "checks": checks,
                # what the reason says, machine-readable (course.assess.codes): what reports read
                "code": code, "findings": findings or [code],
                # what nbgrader's in-kernel test cell said; differs from points under tampering
                "kernel_points": grade.get("kernel")})
        from course.assess.variants import variant_of

        return {"student": student, "assignment": self.assignment_name, "status": status,
                "variant": variant_of(self.assignment_name, student), "reason": reason, "score": round(sum(p["points"] or 0.0 for p in parts), 6),
                "max_score": sum(p["max_points"] for p in parts), "parts": parts}

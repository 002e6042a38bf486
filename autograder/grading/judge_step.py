"""Judging: each registered part scored in this process from the plain values its clean room, kernel
or ranks gave (a part of :class:`~autograder.grading.grader.Grader`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Dict, Optional

from ..judging import sandboxed_cleanroom as cleanroom

from .common import ENDED_RUN, cells_words

if TYPE_CHECKING:  # the judge's record; imported where judging happens (the course package loads lazily)
    from course.assess.registry import Verdict


class Judging:
    """Judging: a part of the grader (its methods use its settings)."""

    def _judge(self, run: dict, seed: int, problem: Optional[str]) -> Dict[str, "Verdict"]:
        """Trusted judging: parts with names or functions from the clean room, the rest (locked
        predictions) from the kernel's harvest.

        Returns ``{grade_id: Verdict}``: the judge's one record (score in [0, 1], reason, and the
        partial-credit checks) that the gradebook, ``grades.json``, feedback and the LMS export read.
        """
        from course.assess import codes
        from course.assess.registry import RAISED, Verdict
        from course.notebook_api import REGISTRY, judge_json, safe_judge

        room = run.get("cleanroom") or {}
        in_room = set(run["split"]["functions"]) | set(run["split"]["values"])
        failed_room = {"timeout": "your notebook's code did not finish when it was run again to grade "
                                  "it (look for a cell that never ends)",
                       "no_result": "your answers could not be read: the notebook's code stopped the "
                                    "grading run (an exit, a crash, too much memory or a forged result)"}
        if room.get("ended_in"):
            failed_room["no_result"] = failed_room["timeout"] = (
                f"your answers could not be read: cell {room['ended_in']} {ENDED_RUN}")
        verdicts = {}
        for gid in sorted(self.registered):
            if gid in run.get("ranks", {}):  # a collective, judged from its own launch on real ranks
                verdicts[gid] = safe_judge(REGISTRY[gid], run["ranks"][gid], seed)
                continue
            if gid in in_room and room.get("harvested") is None:
                verdicts[gid] = Verdict(0.0, failed_room.get(room.get("state"), "your answers could not be read"),
                                        code=codes.ENDED_RUN if room.get("ended_in") else codes.UNREADABLE)
                continue
            if gid in room.get("ended_by_calls", []):
                name = REGISTRY[gid].function.name
                verdicts[gid] = Verdict(0.0, f"calling your function `{name}` ended the grading run (it killed or "
                                             "stopped the processes that run your code), so it could not be checked",
                                        code=codes.ENDED_RUN)
                continue
            if gid in in_room:
                harvested = cleanroom.with_unbound(REGISTRY[gid], room["harvested"][gid], run.get("bound"))
                verdict = safe_judge(REGISTRY[gid], harvested, seed)
                if cleanroom.names_missing(harvested):
                    # blame only the left-out cells that could have defined what the part misses
                    missing, defines = cleanroom.missing_names(REGISTRY[gid], harvested), room.get("defines", {})
                    could = lambda n: n not in defines or bool(missing & set(defines[n]))  # noqa: E731 -- a one-line helper local to this function
                    hung = [n for n in room.get("stopped_cells", []) if n not in room.get("exited_cells", [])
                            and could(n)]
                    lost = sorted(n for n in set(room.get("exited_cells", [])) | set(room.get("ended_by", []))
                                  if could(n))
                    why = "; ".join(
                        ([cells_words(hung, "never finished and was stopped", "never finished and were stopped")]
                         if hung else [])
                        + ([cells_words(lost, "ended its run and was left out", "ended their runs and were left out")]
                           if lost else []))
                    defines = "it defines is" if len(hung) + len(lost) == 1 else "they define is"
                    why = f" ({why}, so what {defines} missing)" if why else cleanroom.MISSING_NOTE
                    if run.get("syntax_cells"):
                        why = (" (" + cells_words(run["syntax_cells"], "has a syntax error, so none of it ran",
                                                  "have a syntax error, so none of them ran") + ")" + why)
                    verdicts[gid] = replace(verdict, reason=verdict.reason + why)
                    continue
            elif run["harvested"].get(gid) is None:
                verdicts[gid] = Verdict(0.0, "this exercise could not be read from your notebook"
                                 + (" (see the submission note)" if problem else ""), (), code=codes.UNREADABLE)
                continue
            else:
                part, bound = REGISTRY[gid], run.get("bound")
                verdict = judge_json(gid, run["harvested"][gid], seed,
                                     adjust=lambda h: cleanroom.with_unbound(part, h, bound))
                if run.get("stopped_cells") and verdict.score < 1 and RAISED in run["harvested"][gid]:
                    stopped = cells_words([i + 1 for i in run["stopped_cells"]],
                                          "was stopped and left out, so what it defines is missing",
                                          "were stopped and left out, so what they define is missing")
                    verdict = replace(verdict, reason=verdict.reason + f" ({stopped})")
            verdicts[gid] = verdict
        return verdicts

"""Who this kernel is, seen and set from a notebook: no terminal needed.

``student()`` in any cell shows the id this kernel's numbers are drawn for and where it comes from
(:func:`course.assess.variants.current_student`), with a box to save another one as this machine's id (what
``course student ID`` does in a terminal). ``student("ada")`` saves ``ada`` at once. A saved id takes effect
in kernels started afterwards (the numbers of a running kernel were drawn when it started): the panel says to
restart the kernel. Where a stronger source decides (the hub login, ``COURSE_STUDENT``, a grading folder), the
panel says so and saves nothing, since the saved id would not be used.

>>> panel = IdentityPanel(lookup=lambda: ("ada", "Unix user"))
>>> "ada" in panel.status.value and not panel.save.disabled
True
>>> IdentityPanel(lookup=lambda: ("bob", "JupyterHub user")).save.disabled
True
"""

from __future__ import annotations

import html
from typing import Callable, Optional, Tuple

import ipywidgets as widgets

from course.assess import variants
from course.theme import theme_css

#: sources a saved id cannot override (the first that applies wins: :func:`course.assess.variants.current_student`)
STRONGER = {"nbgrader grading folder": "this folder is a grading run: the folder names the student",
            "JupyterHub user": "your hub login is your nbgrader id here",
            "COURSE_STUDENT": "the COURSE_STUDENT environment variable names you; unset it to use a saved id"}
RESTART = "Restart the kernel (Kernel ▸ Restart Kernel…) of each open notebook so its numbers are yours."


class IdentityPanel:
    """The identity card with a box to save an id; display it, or call :func:`student`."""

    def __init__(self, lookup: Callable[[], Tuple[Optional[str], str]] = variants.current_student):
        self._lookup = lookup
        self.status = widgets.HTML()
        self.box = widgets.Text(placeholder="your nbgrader id", description="Your id",
                                style={"description_width": "initial"}, continuous_update=False)
        self.save = widgets.Button(description="Save as my id", icon="user")
        self.message = widgets.HTML()
        self.save.on_click(lambda _button: self._save_from_ui())
        self.widget = widgets.VBox([self.status, widgets.HBox([self.box, self.save]), self.message],
                                   layout=widgets.Layout(padding="6px 10px", margin="6px 0"))
        self.widget.add_class("course-identity")
        self.refresh()

    def refresh(self) -> None:
        student, source = self._lookup()
        who = (f"You are <b>{html.escape(student)}</b> (from: {html.escape(source)})." if student else
               "No student id is set: the notebooks show the workbook's own numbers, and you are graded on the "
               "numbers of the id nbgrader records when you submit.")
        stronger = STRONGER.get(source)
        self.save.disabled = self.box.disabled = stronger is not None
        self.status.value = (f"{theme_css()}<div class='course-ui'><div class='course-kicker'>Your identity</div>{who}"
                             + (f" {html.escape(stronger)}." if stronger else
                                " To change it, type your nbgrader id and save it.") + "</div>")

    def set(self, student_id: str) -> str:
        """Save ``student_id`` as this machine's id (``course student ID``); returns what the panel says."""
        student, source = self._lookup()
        if source in STRONGER:
            text = f"Not saved: {STRONGER[source]}."
        else:
            path = variants.save_student(student_id)  # ValueError names what an id may hold
            text = f"Saved {student_id.strip()!r} in {path}. {RESTART}"
        self.message.value = f"<div class='course-ui'>{html.escape(text)}</div>"
        self.refresh()
        return text

    def _save_from_ui(self) -> None:
        try:
            self.set(self.box.value)
        except ValueError as exc:  # a clear line, never a traceback into the widget callback
            self.message.value = f"<div class='course-ui course-tone-bad'>{html.escape(str(exc))}</div>"

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def student(student_id: Optional[str] = None) -> IdentityPanel:
    """Show who this kernel is; with ``student_id``, save it as this machine's id first (then restart the kernel)."""
    panel = IdentityPanel()
    if student_id is not None:
        print(panel.set(student_id))
    return panel

"""An executed notebook's widget (an ipywidgets/bqplot instrument) as a note, not a blank box.

The site loads no widget JavaScript (it would come from a CDN; ``nb_ipywidgets_js = {}`` in
``conf.py``), so a widget view MyST-NB writes would stay empty. Each becomes a short note saying
where the widget lives; every number a notebook states in text or tables still shows.
"""

from __future__ import annotations

from docutils import nodes

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def replace_widget_views(app, doctree, docname) -> None:
    for raw in list(doctree.findall(nodes.raw)):
        if WIDGET_VIEW in raw.astext():
            note = nodes.paragraph(classes=["widget-note"])
            note += nodes.emphasis(text="An interactive chart is drawn here when this notebook runs in "
                                        "JupyterLab (python3 dev.py lab).")
            raw.replace_self(note)


def setup(app):
    app.connect("doctree-resolved", replace_widget_views)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

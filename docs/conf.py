"""Sphinx configuration of the course's documentation site (``python3 dev.py docs``).

MyST Markdown pages and notebooks (MyST-NB), the book theme, and references generated from the
code: the command lines from their argument parsers (sphinx-argparse), the grading settings from
their traitlets declarations (``_ext/course_reference.py``) and ``course.core`` from its numpydoc
docstrings. Building needs no network: maths is MathML (``_ext/offline_math.py``), the theme's
assets are in its package, and no widget JavaScript is loaded from a CDN.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(DOCS / "_ext"), str(ROOT)]

project = "Distributed Training Systems"
author = "the course's authors"
copyright = "the course's authors"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinxarg.ext",
    "offline_math",
    "offline_widgets",
    "course_reference",
    "code_values",
    "internal_links",
]

# ---- sources -------------------------------------------------------------------------------------
exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md"]
root_doc = "index"
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "amsmath", "attrs_inline"]
myst_heading_anchors = 3

# ---- notebooks -----------------------------------------------------------------------------------
# The instructor tutorial and the validation notebook run at every build, so their outputs are real.
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
# no require.js or widget manager from a CDN: the pages read offline (widgets show their text form)
nb_ipywidgets_js = {}

# ---- checks --------------------------------------------------------------------------------------
# every cross-reference must resolve (CI builds with -W): a broken link is an error
nitpicky = True
nitpick_ignore_regex = [
    # types named in numpydoc parameter lists and annotations of outside libraries
    ("py:class", r"(numpy|np|pandas|pd|typing|collections|pathlib|argparse|traitlets|nbformat|nbgrader)\..*"),
    ("py:class", r"(ArrayLike|NDArray|array_like|array-like|ndarray|optional|callable|scalar|Path)"),
]

# pages written by hand may skip a heading level (H1 to H3); that is style, not a broken site
suppress_warnings = ["myst.header"]

# ---- API reference -------------------------------------------------------------------------------
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types and units
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set = set()
numpydoc_xref_param_type = False

# ---- HTML ----------------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_math_renderer = "mathml"  # _ext/offline_math.py: no MathJax from a CDN
html_title = "Distributed Training Systems"
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "home_page_in_toc": True,
    "navigation_with_keys": False,
}
html_last_updated_fmt = None
html_show_sourcelink = False

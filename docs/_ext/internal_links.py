"""Every internal link of the built site leads somewhere: an offline link check.

A page may name a file of the repository outside ``docs/`` with a relative link
(``[the planner](../../course/core/planner.py)``): the site does not publish those files, so
the link becomes the file's path in the repository, shown as code (:class:`RepositoryPaths`); a
link to a file that does not exist stays a warning.

Sphinx (``nitpicky``) and MyST already report a cross-reference they cannot resolve; this also
reads the HTML they wrote, so a raw link, a theme link or a link in a notebook's output that
names a missing page, file or ``#anchor`` is a warning too (an error under ``-W``). Links that
leave the site (``http:``, ``mailto:``...) are not followed: building needs no network.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            if attrs.get(key) and not (tag == "link" and key == "href" and attrs.get("rel") == "preconnect"):
                self.links.append(attrs[key])


def broken_links(outdir: Path) -> list:
    """``[(page, link, why)]`` for every local link of the HTML in ``outdir`` that leads nowhere."""
    pages = {}
    for path in outdir.rglob("*.html"):
        if path.relative_to(outdir).parts[0] in ("_static", "_sources"):
            continue  # the theme's template macros and page sources, not pages
        page = _Page()
        page.feed(path.read_text(errors="replace"))
        pages[path.resolve()] = page
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("data:", "javascript:")):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append((path, link, "no such file"))
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if unquote(parts.fragment) not in ids:
                    broken.append((path, link, "no such anchor"))
    return broken


def check(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    for path, link, why in broken_links(outdir):
        logger.warning("broken internal link %r in %s (%s)", link, path.relative_to(outdir), why)


class RepositoryPaths(SphinxPostTransform):
    """A MyST link to an existing repository file outside the site: its text and its path."""

    default_priority = 8  # before MyST's own resolver (9) warns that it found no page

    def run(self, **kwargs) -> None:
        srcdir = Path(self.env.srcdir).resolve()
        repository = srcdir.parent
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") != "myst":
                continue
            path = self._repository_file(node, srcdir)
            if path is None or srcdir in path.parents or repository not in path.parents:
                continue
            shown = nodes.inline()
            text = node.astext().strip()
            relative = str(path.relative_to(repository))
            if text and text != relative:
                shown += nodes.Text(f"{text} (")
                shown += nodes.literal(relative, relative)
                shown += nodes.Text(")")
            else:
                shown += nodes.literal(relative, relative)
            node.replace_self(shown)

    def _repository_file(self, node, srcdir: Path):
        """The existing file a MyST link names, or None. A link to a ``.md``/``.ipynb`` file
        arrives as a document name (``refdomain="doc"``, no suffix), anything else as a path."""
        target = urlsplit(node["reftarget"])
        if target.scheme or not target.path:
            return None
        if node.get("refdomain") == "doc":
            if node["reftarget"] in self.env.all_docs:
                return None  # a page of the site
            base = Path(unquote(target.path))
            base = base if base.is_absolute() else srcdir / base
            candidates = [base.with_name(base.name + suffix) for suffix in ("", ".md", ".ipynb", ".rst")]
        else:
            source = (srcdir / self.env.doc2path(node.get("refdoc", self.env.docname), False)).parent
            candidates = [source / unquote(target.path)]
        return next((path.resolve() for path in candidates if path.is_file()), None)


def setup(app):
    app.add_post_transform(RepositoryPaths)
    app.connect("build-finished", check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

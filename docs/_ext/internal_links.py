"""Every internal link of the built site leads somewhere: an offline link check.

Sphinx (``nitpicky``) and MyST already report a cross-reference they cannot resolve; this also
reads the HTML they wrote, so a raw link, a theme link or a link in a notebook's output that
names a missing page, file or ``#anchor`` is a warning too (an error under ``-W``). Links that
leave the site (``http:``, ``mailto:``...) are not followed: building needs no network.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

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


def setup(app):
    app.connect("build-finished", check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Accessibility of the labs as a student has them: axe-core, and chart marks that show in both themes (issue 24).

Each release lab (Lab 05, Lab 06, the tutorial) runs in real JupyterLab with
every prediction answered (``COURSE_AUTOPREDICT``), so every instrument and
reveal shows. Then, in the Light and in the Dark theme:

* axe-core (bundled by ``axe-playwright-python``) audits the notebook's output
  areas, the course's part of the page (JupyterLab's own chrome is not ours),
  and must find no violation of impact "serious" or "critical" (for instance
  ``aria-input-field-name``: a slider handle without a name);
* every line, point and bar drawn on a chart stands at least 3:1 against the
  chart's background (WCAG 2.1, 1.4.11 non-text contrast), measured on the
  colours the browser computed, so a theme variable that does not resolve fails;
* every chart has its text alternative in the page, and every slider handle an
  accessible name.

JupyterLab 4.6's ``.jp-ThemedContainer`` clips its content (``overflow:
hidden``), which makes axe-core treat the whole app as off-screen (axe-core
issue 3996); the test lifts that clip before auditing.
"""

from __future__ import annotations

import pytest

from .conftest import ARTIFACTS, CONTRAST_JS
from .test_labs_browser import (LAB05, LAB06, LAB07, THEMES, TUTORIAL, card_number, expect_no_traceback, run_all_or_fail,
                                screenshot_on_failure, set_theme, wait_until)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SERIOUS = ("serious", "critical")
UNCLIP = ".jp-ThemedContainer { overflow: visible !important; }"
#: WCAG 2.1 1.4.11: graphical objects need 3:1 against what is next to them.
MARK_CONTRAST = 3.0

#: Contrast of every drawn line (path.line: stroke), point (path.dot: fill) and bar (rect.bar: fill) of the
#: course's charts against the chart's background: the plot area's fill if it paints one, else the page's
#: backgrounds composited up to the first opaque one. Charts drawn over a heat map (the parallelism map's
#: markers sit on its own cells) are left out: their background is the cells, not the page.
MARKS = "() => {" + CONTRAST_JS + """
    const out = [];
    let index = -1;
    for (const fig of document.querySelectorAll('.course-instrument .bqplot')) {
        if (fig.querySelector('.heatmapcell, .heatmap') || !fig.getBoundingClientRect().width) continue;
        index += 1;
        let bg = background(fig);
        const plot = fig.querySelector('.plotarea_background');
        const fill = plot && parse(getComputedStyle(plot).fill);
        if (fill && fill[3] > 0 && parseFloat(getComputedStyle(plot).fillOpacity || 1) > 0) bg = over(fill, bg);
        const title = (fig.querySelector('.mainheading') || {}).textContent || '';
        for (const el of fig.querySelectorAll('path.line, path.dot, rect.bar')) {
            const box = el.getBoundingClientRect();
            if (!box.width && !box.height) continue;
            const style = getComputedStyle(el);
            if (style.display === 'none' || style.visibility === 'hidden' || parseFloat(style.opacity) === 0) continue;
            const prop = el.matches('path.line') ? style.stroke : style.fill;
            const colour = parse(prop);
            if (!colour || colour[3] === 0) continue;
            out.push({figure: index, chart: title, kind: el.getAttribute('class'), colour: prop,
                      background: `rgb(${bg.slice(0, 3).map(Math.round)})`, ratio: ratio(over(colour, bg), bg)});
        }
    }
    return {marks: out, figures: index + 1};
}"""

#: Slider handles in the course's outputs without an accessible name, and charts without their words.
UNNAMED = """() => ({
    handles: [...document.querySelectorAll('.jp-OutputArea [role="slider"]')]
        .filter(h => !(h.getAttribute('aria-label') || '').trim() && !h.getAttribute('aria-labelledby'))
        .map(h => h.closest('.widget-slider, .widget-hslider')?.querySelector('.widget-label')?.textContent || '?'),
    charts: [...document.querySelectorAll('.course-chart')].filter(c => c.querySelector('.bqplot')
        && !(c.querySelector('.course-chart-text')?.textContent || '').startsWith('Chart:')).length,
    chartsTotal: document.querySelectorAll('.course-chart').length,
})"""


def axe_violations(page) -> list[dict]:
    """axe-core's serious and critical violations inside the notebook's output areas."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, context={"include": [[".jp-OutputArea"]]},
                        options={"resultTypes": ["violations"]})
    found = []
    for violation in results.response["violations"]:
        if violation["impact"] in SERIOUS:
            found.append({"rule": violation["id"], "impact": violation["impact"], "help": violation["help"],
                          "nodes": [" ".join(map(str, node["target"])) for node in violation["nodes"][:5]],
                          "count": len(violation["nodes"])})
    return found


#: every lab a student receives, and the free-play notebooks that hold the other instruments
NOTEBOOKS = [f"release/{lab}/{lab}.ipynb" for lab in (LAB05, LAB06, TUTORIAL, LAB07)] + [
    f"notebooks/explore_{topic}.ipynb" for topic in ("collectives", "data_parallel", "pipeline", "3d_parallelism",
                                                     "sync")]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.split("/")[-1].removesuffix(".ipynb"))
def test_no_serious_axe_violation_and_every_mark_shows_in_both_themes(lab_notebook, notebook):
    from playwright.sync_api import expect

    assignment = notebook.split("/")[-1].removesuffix(".ipynb")
    page = lab_notebook(notebook, run=False)
    with screenshot_on_failure(page, f"{assignment}_accessibility"):
        run_all_or_fail(page)  # every lock answered by COURSE_AUTOPREDICT: all instruments show
        expect_no_traceback(page)
        instruments = page.locator(".course-instrument").all()  # the tutorial has none: its tables are audited
        page.add_style_tag(content=UNCLIP)
        problems = {}
        for theme in THEMES:
            set_theme(page, theme)
            for inst in instruments:  # bqplot lays a figure out once it is on screen
                inst.scroll_into_view_if_needed()
                expect(inst.locator(".bqplot").first).to_be_visible(timeout=30_000)
            page.wait_for_timeout(1000)
            names = page.evaluate(UNNAMED)
            measured = page.evaluate(MARKS)
            marks = measured["marks"]
            low = sorted((m for m in marks if m["ratio"] < MARK_CONTRAST), key=lambda m: m["ratio"])
            violations = axe_violations(page)
            problems[theme] = {"axe": violations, "faint marks": low[:12], "unnamed handles": names["handles"],
                               "charts without words": names["charts"]}
            if instruments:  # every chart drawn on the page's background had its marks measured
                assert names["chartsTotal"] > 0 and measured["figures"] > 0, f"{theme}: no chart measured"
                assert {m["figure"] for m in marks} == set(range(measured["figures"])), f"{theme}: {measured}"
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"{assignment}_accessibility_{theme.split()[-1].lower()}.png"))
        failing = {theme: {k: v for k, v in found.items() if v} for theme, found in problems.items()}
        assert not any(failing.values()), f"{assignment}: {failing}"
        if assignment == LAB06:
            expect_n_steps_by_powers_of_two(page)
            expect_m_steps_visibly(page)
            expect_m_typed_and_time_ticks_in_words(page)


def expect_n_steps_by_powers_of_two(page) -> None:
    """The comparator's N from the keyboard: Tab-reachable handle, ArrowRight doubles N (128 -> 256, not 129)."""
    from playwright.sync_api import expect

    comparator = page.locator(".course-instrument").filter(
        has=page.get_by_text("All-reduce comparator", exact=True)).first
    handle = comparator.locator(".course-control-gpus [role=slider]").first
    readout = comparator.locator(".course-control-gpus .widget-readout").first
    handle.scroll_into_view_if_needed()
    expect(handle).to_have_attribute("aria-label", "GPUs N")
    assert handle.get_attribute("tabindex") == "0"
    start = int(readout.inner_text().replace(",", ""))
    handle.focus()
    page.keyboard.press("ArrowRight")
    expect(readout).to_have_text(f"{2 * start:,}", timeout=30_000)
    # naive / ring = N (hand computation): the kernel got the new N
    wait_until(page, lambda: abs(card_number(comparator, "ratio") / (2 * start) - 1) < 0.02,
               f"the naive / ring card to show about {2 * start}")


def expect_m_steps_visibly(page) -> None:
    """The M sliders from the keyboard (student trial: 350 -> 351 GB per press, the readout unchanged): one
    ArrowRight on the comparator's 14 GB reads 20, on the dashboard's 350 GB preset 400, and the kernel follows."""
    from playwright.sync_api import expect

    for title, start, right, left in (("All-reduce comparator", "14", "20", "10"),
                                      ("Algorithm selection dashboard", "350", "400", "300")):
        inst = page.locator(".course-instrument").filter(has=page.get_by_text(title, exact=True)).first
        handle = inst.locator(".course-control-message_gb [role=slider]").first
        readout = inst.locator(".course-control-message_gb .widget-readout").first
        handle.scroll_into_view_if_needed()
        expect(handle).to_have_attribute("aria-label", "M (GB)")
        expect(readout).to_have_text(start, timeout=30_000)
        handle.focus()
        page.keyboard.press("ArrowRight")
        expect(readout).to_have_text(right, timeout=30_000)
        expect(handle).to_have_attribute("aria-valuetext", right)  # a screen reader says 20, not the index
        expect(inst.locator(".course-math-peek")).to_contain_text(f"M = {right} GB", timeout=30_000)
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        expect(readout).to_have_text(left, timeout=30_000)
        expect(inst.locator(".course-math-peek")).to_contain_text(f"M = {left} GB", timeout=30_000)


def expect_m_typed_and_time_ticks_in_words(page) -> None:
    """Student audit: after arrow presses from 10 to 40 GB every time tick of the comparator reads in words
    ('100 ms', '1,000 s'), none in d3's default format ('1e+1'); a number typed into the M box is taken (and
    held: 37.5 GB), nonsense is refused with a note, never a traceback."""
    import re

    from playwright.sync_api import expect

    comparator = page.locator(".course-instrument").filter(
        has=page.get_by_text("All-reduce comparator", exact=True)).first
    entry = comparator.locator(".course-control-message_gb").locator("xpath=..").locator(".course-log-entry input")
    handle = comparator.locator(".course-control-message_gb [role=slider]").first
    peek = comparator.locator(".course-math-peek")
    handle.scroll_into_view_if_needed()
    expect(peek).to_contain_text("M = 10 GB", timeout=30_000)  # where expect_m_steps_visibly left it
    handle.focus()
    for _ in range(4):  # 10 -> 14 -> 20 -> 30 -> 40 GB
        page.keyboard.press("ArrowRight")
    expect(peek).to_contain_text("M = 40 GB", timeout=30_000)
    expect(entry).to_have_value("40")  # the box is the readout
    page.wait_for_timeout(1500)  # bqplot's axis transition lands after the redraw
    ticks = comparator.locator(".bqplot").first.evaluate(
        "f => [...f.querySelectorAll('.axis')].flatMap(a => [...a.querySelectorAll('.tick text')]"
        ".map(t => t.textContent))")
    times = [t for t in ticks if re.search(r"\d", t)]
    assert times and all(re.fullmatch(r"[\d,]+ (ns|µs|ms|s)|10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+ s", t) for t in times), ticks

    entry.scroll_into_view_if_needed()
    expect(entry).to_have_attribute("aria-label", "M (GB), typed value")
    entry.fill("37.5")
    entry.press("Enter")
    expect(peek).to_contain_text("M = 37.5 GB", timeout=30_000)
    expect(handle).to_have_attribute("aria-valuetext", "37.5")
    entry.fill("lots")
    entry.press("Enter")
    expect(comparator.locator(".course-log-note")).to_contain_text("is not a number", timeout=30_000)
    expect(entry).to_have_value("37.5")
    expect(peek).to_contain_text("M = 37.5 GB")
    expect_no_traceback(page)

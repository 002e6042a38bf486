"""A student's path through the labs in real JupyterLab (issue 4, "done when").

Each test copies a *release* notebook (what a student receives) into its own
student folder of a JupyterLab server whose kernels have no
``COURSE_AUTOPREDICT`` (every lock waits for a click) and a temporary
``COURSE_LEDGER``, runs all cells from the menu, and then behaves like a
student in the page: sees each instrument hidden behind its lock, picks an
option, presses the lock button, sees the instrument appear, and moves the
instrument's own controls (toggle buttons, slider handles, dropdowns) into
the act's failure states. The autograded answer cells are filled in the copy
before it is opened (the student typed them); everything else is the release
notebook as shipped.

Expected numbers are hand computations, not output of the code under test.
Lab 06: naive / ring all-reduce time = N (the root's port carries 2(N−1)M, a
ring port 2(N−1)/N·M), whatever the link; the 350 GB all-reduce on 128 GPUs
over NDR takes 2·127/128·350 GB / 50 GB/s = 13.9 s, so with 1 s of compute it
is 93 % of the step, and with 100 s only 12 %. Act II's graded time is the fastest of the α-β times
its prompt states for the student's own update (for the story's 0.5 MB on 128 GPUs over NDR,
Rabenseifner: 2·7·5 µs + 2·127/128 · 0.5 MB / 50 GB/s = 89.8 µs). Lab 05: GPT-3 175B at
16 B/param over TP·PP = 32 GPUs holds 87.5 GB of model state (> 80 GB) before
any activation; TP = 16 leaves an 8-GPU node; PP = 3 does not divide 1,024/8;
the bubble share with p = 4, m = 1 is 3/4.

"No traceback" means: no stderr or error output in the notebook, nothing in
JupyterLab's log console (where a widget callback's traceback goes), and no
``instrument_error`` banner. A failing test leaves a screenshot in
``test-artifacts/``; a lab's widget classes and descriptions are the
selectors (``.course-instrument`` + title, ``.course-control-<name>``,
``.course-failure-<code>``, ``.course-prediction-lock`` + question).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from tests import progress

from .conftest import (ARTIFACTS, CHROMIUM, CONTRAST_JS, REPO, dismiss_dialogs, open_notebook_page, shutdown_kernels,
                       start_lab_server, wait_idle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GATE_NOTE = "Lock your prediction above to unlock this instrument."
TRACEBACK_OUTPUT = '.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]'


@pytest.fixture(scope="module")
def student_server(tmp_path_factory):
    """One JupyterLab for this module, as a student has it: no autopredict, its own ledger."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install -y chromium; .ci/run installs it in CI)")
    with start_lab_server(tmp_path_factory.mktemp("student"), autopredict=False) as server:
        yield server


@pytest.fixture
def open_release(student_server, browser):
    """``open_release(assignment, answers)`` -> (page, student folder), all cells run."""
    contexts = []

    def open_(assignment: str, answers: dict[str, str]):
        folder = Path(tempfile.mkdtemp(prefix=f"student_{assignment}_", dir=student_server.root))
        notebook = _student_copy(assignment, answers)
        nbformat.write(notebook, folder / f"{assignment}.ipynb")
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        contexts.append(context)
        relative = f"{folder.name}/{assignment}.ipynb"
        page = open_notebook_page(student_server, context, relative)
        with screenshot_on_failure(page, f"{assignment}_run_all"):
            run_all_or_fail(page)
        return page, folder

    yield open_
    for context in contexts:
        context.close()
    shutdown_kernels(student_server)


# Run All of the page, judged from the cells' prompts. ``base`` is the highest execution count before the
# click, so only this run's numbers count. 'ran': every code cell has run; 'traceback': a cell raised (Run All
# stops there); 'lost': nothing runs or waits, the kernel is idle, yet cells have not run (queued cells dropped);
# false: still running. PROMPT_NUMBERS: the execution counts shown, 0 for none.
PROMPT_NUMBERS = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
    .map(p => { const m = /\\[(\\d+)\\]/.exec(p.textContent); return m ? parseInt(m[1]) : 0; })"""
RUN_ALL_STATE = """(base) => {
    const outputs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')];
    if (outputs.some(o => o.textContent.includes('Traceback (most recent call last)'))) return 'traceback';
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')];
    if (!prompts.length) return false;
    const ran = p => { const m = /\\[(\\d+)\\]/.exec(p.textContent); return m && parseInt(m[1]) > base; };
    if (prompts.every(ran)) return 'ran';
    const ind = document.querySelector('.jp-Notebook-ExecutionIndicator');
    const idle = ind && ind.getAttribute('data-status') === 'idle';
    return idle && !prompts.some(p => p.textContent.includes('*')) ? 'lost' : false;
}"""
RUN_STARTED = """(base) => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
    .some(p => { const m = /\\[(\\d+|\\*)\\]/.exec(p.textContent); return m && (m[1] === '*' || parseInt(m[1]) > base); })"""
WIDGET_LOST = "Error displaying widget"
# every widget output has rendered its view, or given up with WIDGET_LOST; returns [rendered, lost, total]
WIDGET_OUTPUTS = """() => {
    // a widget view output is a panel without a data-mime-type (rendered outputs carry one)
    const outs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output:not([data-mime-type])')];
    const lost = outs.filter(o => o.textContent.includes('Error displaying widget')).length;
    const shown = outs.filter(o => o.querySelector('.jupyter-widgets')).length;
    return [shown, lost, outs.length];
}"""


def run_all_or_fail(page) -> None:
    """Run All Cells from the menu until every cell has run and every widget shows.

    Fails with the traceback's text if a cell raises. Run All is clicked again
    (at most four times) when the run never starts (on a busy machine the first
    menu click can land before the menu is ready), when its queued cells are
    dropped, or when widgets show "Error displaying widget: model not found"
    (cells that ran before the page's widget manager was connected to the kernel).
    The run itself is waited on for as long as the kernel and the page are working
    (tests/progress.py), however loaded the machine is.
    """
    for attempt in range(1, 5):
        base = max(page.evaluate(PROMPT_NUMBERS), default=0)
        dismiss_dialogs(page)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        try:
            page.wait_for_function(RUN_STARTED, arg=base, timeout=30_000, polling=250)
        except Exception:
            print(f"[browser] Run All attempt {attempt}: nothing started within 30 s; clicking again")
            continue
        while True:
            state = progress.wait_for_function(page, RUN_ALL_STATE, "Run All Cells", arg=base).json_value()
            if state != "lost":
                break
            page.wait_for_timeout(2000)  # 'lost' must persist: a cell may be between two states
            if page.evaluate(RUN_ALL_STATE, base) == "lost":
                break
        if state == "traceback":
            texts = page.locator(".jp-Notebook .jp-OutputArea-output").all_inner_texts()
            raise AssertionError("a cell raised during Run All:\n"
                                 + "\n".join(t for t in texts if "Traceback" in t)[-3000:])
        if state == "lost":
            print(f"[browser] Run All attempt {attempt}: the queued cells were dropped; running them again")
            continue
        wait_idle(page)
        progress.wait_for_function(page, f"() => {{ const [s, l, n] = ({WIDGET_OUTPUTS})(); return n > 0 && s + l === n; }}",
                                   "every widget output rendered")
        shown, lost, total = page.evaluate(WIDGET_OUTPUTS)
        if not lost:
            return
        print(f"[browser] Run All attempt {attempt}: {lost} of {total} widgets have no model in the page; "
              "running all again")
    raise AssertionError("Run All Cells did not run every cell with its widgets shown in four attempts")


def _student_copy(assignment: str, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The release notebook with the answer cells named in ``answers`` (by grade id) typed in.

    The other answer cells keep the release stub (a comment), as a student who
    skips a question leaves them.
    """
    notebook = nbformat.read(REPO / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    filled = set()
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution") and meta.get("grade_id") in answers:
            cell.source = answers[meta["grade_id"]]
            filled.add(meta["grade_id"])
    assert filled == set(answers), f"answer cells missing from the release notebook: {set(answers) - filled}"
    return notebook


@contextlib.contextmanager
def screenshot_on_failure(page, name: str):
    try:
        yield
    except BaseException:
        ARTIFACTS.mkdir(exist_ok=True)
        try:
            page.screenshot(path=str(ARTIFACTS / f"FAILED_{name}.png"), full_page=True)
        except Exception as exc:  # noqa: BLE001 - keep the original failure
            print(f"[browser] could not take the failure screenshot: {exc}")
        raise


# -- what a student sees and does ------------------------------------------------------------------

def lock_box(page, question: str):
    return page.locator(".course-prediction-lock", has_text=question)


def instrument(page, title: str):
    """The instrument whose title is exactly ``title``."""
    return page.locator(".course-instrument").filter(has=page.get_by_text(title, exact=True))


def expect_gated(inst) -> None:
    """The instrument's title and gate note show; its controls and charts do not."""
    from playwright.sync_api import expect

    inst.scroll_into_view_if_needed()
    expect(inst.get_by_text(GATE_NOTE)).to_be_visible(timeout=60_000)
    expect(inst.locator(".bqplot").first).to_be_hidden()
    expect(inst.locator(".course-card").first).to_be_hidden()


def expect_shown(inst) -> None:
    """The instrument's charts show and its gate note is gone (bqplot sizes a figure once it is scrolled to)."""
    from playwright.sync_api import expect

    inst.scroll_into_view_if_needed()
    expect(inst.locator(".bqplot").first).to_be_visible(timeout=30_000)
    expect(inst.get_by_text(GATE_NOTE)).to_be_hidden()


def lock_prediction(page, lock, option: str, gated_instrument) -> None:
    """Pick ``option`` (words of its label, e.g. "about 128x": its letter differs from student to student), check it alone unlocks nothing, lock."""
    from playwright.sync_api import expect

    lock.scroll_into_view_if_needed()
    button = lock.get_by_role("button", name="Lock prediction")
    expect(button).to_be_enabled(timeout=30_000)  # a Tab stop before anything is chosen
    click_every_option(lock)
    lock.locator("label", has_text=option).locator("input[type=radio]").click()
    # choosing alone unlocks nothing: the instrument must still be gated
    expect(gated_instrument.get_by_text(GATE_NOTE)).to_be_visible()
    expect(gated_instrument.locator(".bqplot").first).to_be_hidden()
    button.click()
    expect(lock.get_by_text("Your prediction:")).to_be_visible(timeout=30_000)
    expect(lock.get_by_role("button", name="Locked")).to_be_disabled()
    expect(lock.locator("input[type=radio]").first).to_be_disabled()
    expect_shown(gated_instrument)


def click_every_option(lock) -> None:
    """Click each option's own radio button, in turn; each must become the checked one.

    Playwright refuses a click that another element would receive (a wrapped
    label lying over the next option), so this also proves the options do not
    overlap.
    """
    from playwright.sync_api import expect

    radios = lock.locator("input[type=radio]")
    assert radios.count() >= 2
    for i in range(radios.count()):
        radios.nth(i).click(timeout=10_000)
        expect(radios.nth(i)).to_be_checked(timeout=10_000)
    boxes = [lock.locator(".widget-radio-box label").nth(i).bounding_box() for i in range(radios.count())]
    for above, below in zip(boxes, boxes[1:]):
        assert above["y"] + above["height"] <= below["y"] + 0.5, f"option labels overlap: {above} {below}"
    for i, box in enumerate(boxes):  # the radio sits on the first line of its option, left of the text
        radio = radios.nth(i).bounding_box()
        assert radio["y"] < box["y"] + 12 and radio["x"] <= box["x"] + 4, f"option {i}: radio {radio} in {box}"


def rerun_cell(page, source: str):
    """Select the code cell whose source is ``source`` and run it with Shift+Enter, as a student would."""
    cell = page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea-editor", has_text=source)).first
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputArea-prompt").click()
    page.keyboard.press("Shift+Enter")
    return cell


def drag_slider_to(page, inst, control: str, fraction: float) -> None:
    """Drag the handle of slider ``control`` to ``fraction`` (0 = left end, 1 = right end) of its track."""
    track = inst.locator(f".course-control-{control} .noUi-target").first
    handle = inst.locator(f".course-control-{control} .noUi-handle").first
    track.scroll_into_view_if_needed()
    tbox, hbox = track.bounding_box(), handle.bounding_box()
    y = hbox["y"] + hbox["height"] / 2
    page.mouse.move(hbox["x"] + hbox["width"] / 2, y)
    page.mouse.down()
    # past the end clamps to the end
    target = tbox["x"] + fraction * tbox["width"] + (20 if fraction >= 1 else -20 if fraction <= 0 else 0)
    page.mouse.move(target, y, steps=8)
    page.mouse.up()


def choose(inst, control: str, contains: str) -> str:
    """Pick the first option of dropdown ``control`` whose label contains ``contains``; return the label."""
    select = inst.locator(f".course-control-{control} select").first
    select.scroll_into_view_if_needed()
    # ipywidgets writes the labels with no-break spaces
    labels = [t.replace("\xa0", " ") for t in select.evaluate("s => [...s.options].map(o => o.textContent)")]
    index = next((i for i, t in enumerate(labels) if contains in t), None)
    assert index is not None, f"no option containing {contains!r} in {control}: {labels}"
    select.select_option(index=index)
    return labels[index]


def card_number(inst, card: str) -> float:
    """The number on an instrument's metric card ("128.0×" -> 128.0, "91.7 %" -> 91.7)."""
    text = inst.locator(f".course-card-{card} .course-card-value").first.inner_text()
    match = re.search(r"\d[\d,]*\.?\d*", text)
    assert match, f"no number on card {card}: {text!r}"
    return float(match.group(0).replace(",", ""))


def wait_until(page, condition, what: str, timeout_s: float = 30) -> None:
    """Poll ``condition()`` (reads the page) until true; the wait is on page state, never the check.

    An exception from ``condition`` (a card between two values) counts as not yet.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if condition():
                return
            last = "false"
        except Exception as exc:  # noqa: BLE001 - reported if it never settles
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what} (last: {last})")
        page.wait_for_timeout(200)


def log_console_count(page) -> int:
    """Messages in JupyterLab's log console, where a widget callback's traceback goes (not into the notebook)."""
    item = page.locator(".jp-LogConsoleStatusItem")
    if not item.count() or not item.first.is_visible():
        return 0
    match = re.search(r"\d+", item.first.inner_text())
    return int(match.group(0)) if match else 0


def expect_no_traceback(page) -> None:
    """No traceback in an output or in the log console (widget callbacks), no instrument_error banner."""
    stderr = page.locator(TRACEBACK_OUTPUT).all_inner_texts()
    assert not [t for t in stderr if "Traceback" in t or "Error" in t], f"a traceback shows in the page: {stderr}"
    outputs = page.locator(".jp-Notebook .jp-OutputArea-output").all_inner_texts()
    assert not [t for t in outputs if "Traceback (most recent call last)" in t], "an error output shows in the page"
    assert not [t for t in outputs if WIDGET_LOST in t], "a widget shows 'Error displaying widget'"
    assert log_console_count(page) == 0, "JupyterLab's log console holds messages (a widget callback raised?)"
    assert page.locator(".course-failure-instrument_error").count() == 0, "an instrument shows instrument_error"


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# -- Lab 06 ---------------------------------------------------------------------------------------

LAB06 = "lab06_bandwidth_invariant"
LAB06_ANSWERS = {  # Act II's answer is typed in the page, once its prompt has shown the student's own update
    "lab06_act1_ratio_answer": "naive_over_ring = comparator.result['times']['naive'] / comparator.result['times']['ring']",
}
#: Act II's prompt (a *Your numbers* cell): the student's own update, link and cluster
OWN_UPDATE = re.compile(r"M = ([\d,]+) bytes.*?N = (\d+) GPUs over (.+?) \(B = ([\d.]+) GB/s, α = ([\d.]+) µs\)",
                        re.S)


#: How a student reads each algorithm on the dashboard's cards (student audit: no code names such as "recursive_doubling")
SHOWN_AS = {"ring": "ring", "tree": "tree", "recursive_doubling": "recursive doubling", "rabenseifner": "Rabenseifner"}


def fastest_by_hand(m: float, n: int, bandwidth: float, alpha: float) -> tuple[str, float]:
    """The fastest all-reduce of ``m`` bytes on ``n`` GPUs and its time (s), by the α-β formulas Act II's prompt
    shows (the naive gather and the double binary tree are never faster than the ring and Rabenseifner)."""
    steps, bytes_term = math.ceil(math.log2(n)), m / bandwidth
    times = {"ring": 2 * (n - 1) * alpha + 2 * (n - 1) / n * bytes_term,
             "tree": 2 * steps * (alpha + bytes_term),
             "recursive_doubling": steps * (alpha + bytes_term),
             "rabenseifner": 2 * steps * alpha + 2 * (n - 1) / n * bytes_term}
    best = min(times, key=times.get)
    return best, times[best]


def type_into_cell(page, cell, source: str) -> None:
    """Replace the source of ``cell`` with ``source`` as typed in its editor, and run it with Shift+Enter."""
    editor = cell.locator(".jp-InputArea-editor .cm-content").first
    cell.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(source)  # no auto-closed brackets or auto-indent, unlike key-by-key typing
    page.keyboard.press("Shift+Enter")


def test_lab06_locks_gate_each_act_and_the_dashboard_reaches_comm_bound(open_release, student_server):
    from playwright.sync_api import expect

    page, folder = open_release(LAB06, LAB06_ANSWERS)
    with screenshot_on_failure(page, LAB06):
        expect_no_traceback(page)
        assert not (folder / "predictions.json").exists(), "a lock locked itself without a click"
        act1 = lock_box(page, "how many times longer does the naive all-reduce take")
        act2 = lock_box(page, "For the 0.5 MB update on 128 GPUs")
        comparator = instrument(page, "All-reduce comparator")
        dashboard = instrument(page, "Algorithm selection dashboard")
        expect_gated(comparator)
        expect_gated(dashboard)

        # Act I: lock, the comparator appears; naive / ring = N (hand computation), also after a drag of N
        lock_prediction(page, act1, "about 128x", comparator)
        expect_gated(dashboard)  # the Act II lock still holds its instrument back
        saved = read_json(folder / "predictions.json")
        assert saved["lab06/act1"]["value"] == "128x" and saved["lab06/act1"]["locked"] is True  # the option's id
        assert "lab06/act2" not in saved
        ratio = comparator.locator(".course-card-ratio")
        expect(ratio).to_contain_text("×", timeout=30_000)
        assert card_number(comparator, "ratio") == pytest.approx(128, rel=0.01)
        readout = comparator.locator(".course-control-gpus .widget-readout").first
        before = ratio.inner_text()
        drag_slider_to(page, comparator, "gpus", 0.3)
        expect(ratio).not_to_have_text(before, timeout=30_000)
        # continuous update: intermediate N values reach the kernel first; wait for the card to match the readout
        wait_until(page, lambda: abs(card_number(comparator, "ratio") / float(readout.inner_text().replace(",", ""))
                                     - 1) < 0.02,
                   "the ratio card to settle on the slider's N")
        gpus = float(readout.inner_text().replace(",", ""))
        assert gpus != 128
        assert card_number(comparator, "ratio") == pytest.approx(gpus, rel=0.02)
        # a slower link (HDR, 25 GB/s) stretches every time, not the ratio: ring = 2(N-1)/N * 14 GB / 25 GB/s
        choose(comparator, "link", "InfiniBand HDR")
        ring_hdr = 2 * (gpus - 1) / gpus * 14 / 25
        wait_until(page, lambda: abs(card_number(comparator, "ring") / ring_hdr - 1) < 0.02,
                   f"the ring card to show {ring_hdr:.3g} s on HDR")
        assert comparator.locator(".course-card-ring .course-card-value").inner_text().endswith(" s")
        assert card_number(comparator, "ratio") == pytest.approx(gpus, rel=0.02)
        rerun_cell(page, "lab.reveal('act1')").locator(".course-reveal").get_by_text(
            "Your prediction holds").wait_for(timeout=60_000)

        # Act II: lock, the dashboard appears; presets move it out of and into the comm > 50 % failure
        lock_prediction(page, act2, "Rabenseifner", dashboard)
        saved = read_json(folder / "predictions.json")
        assert saved["lab06/act2"]["value"] == "rabenseifner" and saved["lab06/act1"]["value"] == "128x"
        banner = dashboard.locator(".course-failure-comm_bound")
        expect(banner).to_be_visible(timeout=30_000)  # 350 GB preset, 1 s compute: 93 %
        dashboard.locator(".course-control-workload button", has_text="small update").click()
        expect(banner).to_have_count(0, timeout=30_000)
        expect(dashboard.locator(".course-card-best")).to_contain_text("Rabenseifner", timeout=30_000)
        dashboard.locator(".course-control-workload button", has_text="175B gradients").click()
        expect(banner).to_be_visible(timeout=30_000)
        expect(banner).to_contain_text("Failure state: communication over 50 % of the step")
        wait_until(page, lambda: abs(card_number(dashboard, "share") - 100 * 13.89 / 14.89) < 0.5,
                   "the share card to show 93 % for 350 GB against 1 s of compute")
        drag_slider_to(page, dashboard, "compute_s", 1.0)  # 100 s of compute per step: 12 %
        expect(banner).to_have_count(0, timeout=30_000)
        # the drag sends intermediate values first: wait for the card to settle at the slider's end
        wait_until(page, lambda: abs(card_number(dashboard, "share") - 100 * 13.89 / 113.89) < 0.3,
                   "the share card to show 12 % at 100 s of compute")
        drag_slider_to(page, dashboard, "compute_s", 0.0)  # 1 ms of compute: communication is everything
        expect(banner).to_be_visible(timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        dashboard.screenshot(path=str(ARTIFACTS / "jupyterlab_lab06_dashboard_comm_bound.png"))

        # Act II's graded answer, as a student gives it: read the own update off the prompt, set the dashboard
        # to it, assign the fastest algorithm's time in µs; the dashboard and the printed answer show the time
        # of the α-β formulas the prompt states, worked out here
        # (has_text with a string ignores case and the reveal above says "your own update" too: match the prompt)
        prompt = page.locator(".jp-OutputArea-output", has_text=re.compile(r"Your own update: read its time")).first
        own = OWN_UPDATE.search(prompt.inner_text().replace("\xa0", " "))
        assert own, f"Act II's prompt does not show the student's own update: {prompt.inner_text()!r}"
        m, n, link = int(own[1].replace(",", "")), int(own[2]), own[3]
        best, seconds = fastest_by_hand(m, n, float(own[4]) * 1e9, float(own[5]) * 1e-6)
        answer = page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea-editor",
                                                                has_text="# small_update_us = ...")).first
        type_into_cell(page, answer, "# small_update_us = ...   (microseconds)\n"
                                     "from course.core import catalog\n"
                                     f"dashboard.controls['gpus'].value = {n}\n"
                                     f"dashboard.controls['link'].value = catalog.link({link!r})\n"
                                     f"dashboard.controls['message_gb'].value = {m / 1e9!r}\n"
                                     "small_update_us = dashboard.result['best_seconds'] * 1e6\n"
                                     "print(f'small_update_us = {small_update_us:.4f}')")
        printed = answer.locator(".jp-OutputArea-output", has_text="small_update_us = ")
        expect(printed).to_be_visible(timeout=60_000)
        assert float(printed.inner_text().split("=")[1]) == pytest.approx(seconds * 1e6, rel=1e-3)
        expect(dashboard.locator(".course-card-best")).to_contain_text(SHOWN_AS[best], timeout=30_000)
        time_card = dashboard.locator(".course-card-time .course-card-value")
        assert time_card.inner_text().endswith("µs") and card_number(dashboard, "time") == pytest.approx(
            seconds * 1e6, rel=0.01)

        ledger = read_json(student_server.root.parent / "ledger.json")
        assert ledger["lab06/act1"]["prediction"] == "128x" and ledger["lab06/act2"]["prediction"] == "rabenseifner"
        expect_no_traceback(page)
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_lab06.png"), full_page=True)


# -- Lab 05 ---------------------------------------------------------------------------------------

LAB05 = "lab05_parallelism_paradox"
LAB05_ANSWERS = {  # what a student types (the other answer cells are left unanswered)
    "lab05_act1_allreduce_answer": "act1_allreduce_s = core.allreduce_time(14e9, 512, 50e9, 5e-6, algorithm='ring')",
    # read off the audit (the cell prints both numbers afterwards)
    "lab05_part3_async_saves_answer": "async_saves_usd = audit.result['async_saves']",
}
EXPLORER, FLEET = "Data-parallel scaling explorer", "All-reduce comparator"
CONFIGURATOR, BUBBLES, AUDIT = "3D-parallelism configurator", "Pipeline bubble vs micro-batches", "Synchronization audit"


def press_on_slider(page, inst, control: str, key: str, times: int = 1) -> None:
    """Focus the handle of slider ``control`` and press ``key`` (ArrowLeft/ArrowRight) ``times`` times."""
    handle = inst.locator(f".course-control-{control} .noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    for _ in range(times):
        page.keyboard.press(key)


def readout(inst, control: str):
    return inst.locator(f".course-control-{control} .widget-readout").first


def toggle(inst, control: str, label: str) -> None:
    """Click the button ``label`` of the ToggleButtons control ``control``."""
    inst.locator(f".course-control-{control}").get_by_role("button", name=label, exact=True).click()


def test_lab05_locks_gate_each_act_and_the_configurator_reaches_its_failure_states(open_release, student_server):
    from playwright.sync_api import expect

    page, folder = open_release(LAB05, LAB05_ANSWERS)
    with screenshot_on_failure(page, LAB05):
        expect_no_traceback(page)
        assert not (folder / "predictions.json").exists(), "a lock locked itself without a click"
        act1 = lock_box(page, "Why does MFU fall as the data-parallel job grows")
        act2 = lock_box(page, "Which layout balances memory, compute and communication best?")
        part3 = lock_box(page, "Which saves more money per month on this cluster")
        explorer, fleet = instrument(page, EXPLORER), instrument(page, FLEET)
        configurator, bubbles, audit = instrument(page, CONFIGURATOR), instrument(page, BUBBLES), instrument(page, AUDIT)
        for inst in (explorer, fleet, configurator, bubbles, audit):
            expect_gated(inst)

        # Act I: one lock opens the explorer and the comparator; NVLink only is forced onto IB beyond 8 GPUs
        lock_prediction(page, act1, "the gradient all-reduce moves from NVLink", explorer)
        expect_shown(fleet)
        for inst in (configurator, bubbles, audit):
            expect_gated(inst)
        forced = explorer.locator(".course-failure-forced_onto_infiniband")
        # it opens in a working state (512 GPUs on InfiniBand NDR); "NVLink only" is the what-if that fails
        expect(explorer.locator(".course-card-mfu .course-card-value")).to_contain_text("%", timeout=30_000)
        expect(explorer.locator(".course-failure")).to_have_count(0, timeout=30_000)
        choose(explorer, "fabric", "NVLink 4 only")
        expect(forced).to_be_visible(timeout=30_000)  # 512 GPUs = 64 nodes of 8 on "NVLink only"
        drag_slider_to(page, explorer, "gpus", 0.0)
        expect(readout(explorer, "gpus")).to_have_text("1", timeout=30_000)
        expect(forced).to_have_count(0, timeout=30_000)
        press_on_slider(page, explorer, "gpus", "ArrowRight", 3)
        expect(readout(explorer, "gpus")).to_have_text("8", timeout=30_000)
        press_on_slider(page, explorer, "gpus", "ArrowRight")  # 16 GPUs: two nodes
        expect(readout(explorer, "gpus")).to_have_text("16", timeout=30_000)
        expect(forced).to_be_visible(timeout=30_000)
        choose(explorer, "fabric", "InfiniBand NDR")  # a fabric between nodes: nothing is forced any more
        expect(forced).to_have_count(0, timeout=30_000)

        # Act II: the configurator and the bubble chart appear; drive each failure state from the page
        lock_prediction(page, act2, "TP=8, PP=4, DP=32", configurator)
        expect_shown(bubbles)
        expect_gated(audit)
        expect(configurator.locator(".course-failure")).to_have_count(0, timeout=30_000)  # ZeRO-1, selective
        crosses = configurator.locator(".course-failure-tp_crosses_node")
        # it opens on TP 4 x PP 8 (no option's layout, so the page does not point to the answer)
        expect(readout(configurator, "tp")).to_have_text("4", timeout=30_000)
        press_on_slider(page, configurator, "tp", "ArrowRight")
        expect(readout(configurator, "tp")).to_have_text("8", timeout=30_000)
        expect(crosses).to_have_count(0, timeout=30_000)
        press_on_slider(page, configurator, "tp", "ArrowRight")  # TP 16 > 8 GPUs of a DGX H100 node
        expect(readout(configurator, "tp")).to_have_text("16", timeout=30_000)
        expect(crosses).to_be_visible(timeout=30_000)
        press_on_slider(page, configurator, "tp", "ArrowLeft")
        press_on_slider(page, configurator, "tp", "ArrowLeft")
        expect(readout(configurator, "tp")).to_have_text("4", timeout=30_000)
        expect(crosses).to_have_count(0, timeout=30_000)
        oom = configurator.locator(".course-failure-out_of_memory")
        toggle(configurator, "zero_stage", "0")
        toggle(configurator, "recompute", "none")
        expect(oom).to_be_visible(timeout=30_000)
        # 16 B/param of weights, gradients and Adam state over TP x PP = 32 GPUs: 87.5 GB > 80 GB before activations
        assert card_number(configurator, "memory") > 16 * 175e9 / 32 / 1e9
        toggle(configurator, "zero_stage", "1")
        toggle(configurator, "recompute", "selective")
        expect(oom).to_have_count(0, timeout=30_000)
        mismatch = configurator.locator(".course-failure-gpus_mismatch")
        press_on_slider(page, configurator, "pp", "ArrowLeft")  # PP 7: 1,024 / (4 x 7) is not whole
        expect(mismatch).to_be_visible(timeout=30_000)
        press_on_slider(page, configurator, "pp", "ArrowRight")
        expect(mismatch).to_have_count(0, timeout=30_000)
        # the bubble chart's own slider moves the configurator: m = 1 < p = 8 stages
        drag_slider_to(page, bubbles, "microbatches", 0.0)
        expect(readout(configurator, "microbatches")).to_have_text("1", timeout=30_000)
        expect(configurator.locator(".course-failure-too_few_microbatches")).to_be_visible(timeout=30_000)
        expect(bubbles.locator(".course-failure-bubble_over_ceiling")).to_be_visible(timeout=30_000)
        wait_until(page, lambda: abs(card_number(bubbles, "bubble") - 100 * 7 / 8) < 0.1,
                   "the bubble card to show (p-1)/(m+p-1) = 7/8")
        ARTIFACTS.mkdir(exist_ok=True)
        configurator.locator(".course-control-tp").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_lab05_configurator_failures.png"))

        # tracks: every track switches the story and the instruments, never a traceback; Cloud restores
        selector = page.locator(".course-track-selector").first
        scene = page.locator(".course-track-scene-act1").first
        for name, devices in (("Edge", 10_000), ("Mobile", 1_000), ("Tiny", 100)):  # fleet sizes: catalog.TRACKS
            selector.scroll_into_view_if_needed()
            before = scene.inner_text()
            selector.get_by_role("button", name=name, exact=True).click()
            expect(scene).not_to_have_text(before, timeout=30_000)
            # the comparator runs the track's fleet; the GPU-cluster instruments say they do not model it
            fleet.scroll_into_view_if_needed()
            expect(fleet.locator(".course-control-gpus")).to_contain_text("Devices N", timeout=30_000)
            wait_until(page, lambda n=devices: readout(fleet, "gpus").inner_text().replace(",", "") == str(n),
                       f"the comparator to take the {name} fleet of {devices} devices")
            for inst in (explorer, configurator):
                expect(inst.locator(".course-failure-track_not_modelled")).to_be_visible(timeout=30_000)
            expect_no_traceback(page)
        selector.get_by_role("button", name="Cloud", exact=True).click()
        for inst in (explorer, configurator):
            expect(inst.locator(".course-failure-track_not_modelled")).to_have_count(0, timeout=30_000)
        expect(fleet.locator(".course-control-gpus")).to_contain_text("GPUs N", timeout=30_000)
        expect(readout(fleet, "gpus")).to_have_text("512", timeout=30_000)
        press_on_slider(page, configurator, "tp", "ArrowRight")  # failure states still reachable on Cloud
        press_on_slider(page, configurator, "tp", "ArrowRight")  # TP 4 -> 8 -> 16
        expect(readout(configurator, "tp")).to_have_text("16", timeout=30_000)
        expect(crosses).to_be_visible(timeout=30_000)

        # Part 3: the audit opens with its lock; async with stale gradients can cost more than it saves:
        # with 5 % stragglers at 1.15x on 1,024 workers almost every sync step waits (1 - 0.95^1024 ~ 1), so async
        # is at most 1.15 / (1 + 0.15 x 0.05) = 1.14x faster, and 100 % extra steps for staleness undo that
        lock_prediction(page, part3, "async SGD", audit)
        costs_more = audit.locator(".course-failure-async_costs_more")
        toggle(audit, "mode", "async")
        drag_slider_to(page, audit, "staleness_pct", 1.0)
        expect(readout(audit, "staleness_pct")).to_have_text(re.compile(r"^100"), timeout=30_000)
        expect(costs_more).to_be_visible(timeout=30_000)
        drag_slider_to(page, audit, "staleness_pct", 0.0)
        expect(costs_more).to_have_count(0, timeout=30_000)
        saved = read_json(folder / "predictions.json")
        assert {k: v["value"] for k, v in saved.items()} == {"lab05/act1": "network", "lab05/act2": "tp8-pp4", "lab05/part3": "async"}
        ledger = read_json(student_server.root.parent / "ledger.json")
        assert [ledger[k]["prediction"] for k in ("lab05/act1", "lab05/act2", "lab05/part3")] == ["network", "tp8-pp4", "async"]
        expect_no_traceback(page)
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_lab05.png"), full_page=True)


# -- every lab: Run All to the end, answers hidden until the reveal, legible in Light and Dark -----------

TUTORIAL = "tutorial_3d_parallelism"
THEMES = ("JupyterLab Light", "JupyterLab Dark")
#: every piece of the course's own UI in a lab
COURSE_UI = (".course-instrument, .course-prediction-lock, .course-reveal, .course-stakeholder, .course-failure, "
             ".course-hud, .course-track-scene, .course-track-selector, .course-banner")
#: WCAG 2.1 contrast of every visible text node under ``roots`` against the background it is drawn on:
#: the computed colour (SVG: fill), with the opacity of its ancestors, over the backgrounds of its ancestors
#: composited up to the first opaque one. Text of disabled controls is left out (WCAG 1.4.3 exempts it).
CONTRAST = "(roots) => {" + CONTRAST_JS + """
    const out = [];
    for (const root of document.querySelectorAll(roots)) {
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            const el = n.parentElement;
            if (!n.textContent.trim() || !el || el.closest('style, script')) continue;
            const label = el.closest('label');
            if (el.closest(':disabled, .mod-disabled') || (label && label.querySelector('input:disabled'))) continue;
            const box = el.getBoundingClientRect();
            const style = getComputedStyle(el);
            if (!box.width || !box.height || style.visibility === 'hidden') continue;
            let fg = parse(el instanceof SVGElement ? style.fill : style.color);
            if (!fg) continue;
            let opacity = 1;
            for (let e = el; e; e = e.parentElement) opacity *= parseFloat(getComputedStyle(e).opacity);
            fg = [fg[0], fg[1], fg[2], fg[3] * opacity];
            const bg = background(el);
            out.push({text: n.textContent.trim().slice(0, 80), ratio: ratio(over(fg, bg), bg),
                      colour: el instanceof SVGElement ? style.fill : style.color, background: `rgb(${bg.slice(0, 3)})`});
        }
    }
    return out;
}"""


def set_theme(page, theme: str) -> None:
    """Switch JupyterLab's theme from its Settings menu, as a student would."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
    page.locator(".lm-Menu-itemLabel", has_text=theme).first.click()
    light = "true" if "Light" in theme else "false"
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{light}'", timeout=30_000)
    page.wait_for_timeout(1000)  # the theme's style sheet applies after the attribute


def plain(markdown: str) -> str:
    """The first words of a quoted markdown paragraph as the page shows them."""
    return markdown.replace("> ", "").replace("**", "")[:40]


def notebook_text(page) -> str:
    """Everything the notebook shows: cell sources (the editors) and outputs."""
    return page.locator(".jp-Notebook").first.inner_text().replace("\xa0", " ")


@pytest.mark.parametrize("assignment", [LAB05, LAB06, TUTORIAL, "lab07_expert_wall", "lab08_ring_for_real"])
def test_run_all_reaches_the_end_and_every_text_reads_in_both_themes(open_release, assignment):
    from playwright.sync_api import expect

    from course.notebook_api.lab_session import labs

    lab = next(x for x in labs().values() if x.name == assignment)
    locks = [(act.id, act.lock) for act in lab.acts if act.lock is not None]
    page, folder = open_release(assignment, {})  # nothing answered: Run All must still reach the last cell
    with screenshot_on_failure(page, f"{assignment}_themes"):
        expect_no_traceback(page)
        for theme in reversed(THEMES):  # the open locks (button, options) read in both themes too
            set_theme(page, theme)
            low = [m for m in page.evaluate(CONTRAST, ".course-prediction-lock") if m["ratio"] < 4.5]
            assert not low, f"open locks: {len(low)} texts below 4.5:1 in {theme}: {low[:12]}"
        shown = notebook_text(page)
        for act_id, lock in locks:  # the answer is in the package, not in the notebook, until the reveal
            assert lock.question in shown
            assert lock.explanation[:60] not in shown, f"{act_id}: the explanation shows before locking"
            assert not lock.reveal or plain(lock.reveal) not in shown, f"{act_id}: the correction shows"
            box = lock_box(page, lock.question)
            box.scroll_into_view_if_needed()
            click_every_option(box)
            box.locator("label", has_text=lock.options[lock.correct][:40]).locator("input[type=radio]").click()
            box.get_by_role("button", name="Lock prediction").click()
            expect(box.get_by_text("Your prediction:")).to_be_visible(timeout=30_000)
        run_all_or_fail(page)  # again, now locked: every instrument and every reveal shows
        expect_no_traceback(page)
        for inst in page.locator(".course-instrument").all():
            expect_shown(inst)
        shown = notebook_text(page)
        for act_id, lock in locks:
            assert lock.explanation[:60] in shown, f"{act_id}: the reveal does not explain"
            assert not lock.reveal or plain(lock.reveal) in shown, f"{act_id}: no correction after reveal"
        assert read_json(folder / "predictions.json").keys() == {lab.lock_key(a) for a, _ in locks}

        ARTIFACTS.mkdir(exist_ok=True)
        for theme in THEMES:
            set_theme(page, theme)
            measured = page.evaluate(CONTRAST, COURSE_UI)
            assert len(measured) > 5, f"too few course texts found in {theme}: {measured}"
            low = sorted((m for m in measured if m["ratio"] < 4.5), key=lambda m: m["ratio"])
            shade = theme.split()[-1].lower()
            for act_id, lock in locks:
                lock_box(page, lock.question).scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / f"{assignment}_{shade}_{act_id}.png"))
            for act_id, _lock in locks:
                reveal = page.locator(".course-reveal").nth([a for a, _ in locks].index(act_id))
                reveal.scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / f"{assignment}_{shade}_{act_id}_reveal.png"))
            for i, inst in enumerate(page.locator(".course-instrument").all()):
                inst.scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / f"{assignment}_{shade}_instrument{i}.png"))
            assert not low, f"{len(low)} texts below 4.5:1 in {theme}: {low[:12]}"


# -- Lab 07 ---------------------------------------------------------------------------------------

LAB07 = "lab07_expert_wall"


def test_lab07_locks_gate_each_act_and_the_keyboard_reaches_every_failure_state(open_release, student_server):
    """Hand computations: the sparse twin holds 47.5 B weights, 190 GB of BF16 weights and gradients on one GPU
    under pure data parallelism (> 80 GB); EP 8 leaves 1/8 of its 45.1 B expert weights per GPU. At EP 16 half of
    each token's 8 copies of 8 kB cross 50 GB/s NDR: 4 x 8192 x 4 x 8192 B / 50 GB/s = 21.5 ms per layer, longer
    than the layer's expert compute (3 x 2 x 8 x 22 M weights x 8192 tokens / (989 TFLOPS x 0.63) = 13.9 ms).
    One expert of 64 on its own GPU at skew 0.5 carries 64 / sum(i^-0.5) = 4.8x the mean load: with experts
    40 % of a balanced step, the others wait 3.8 x 0.4 / (1 + 3.8 x 0.4) = 60 % of the step."""
    from playwright.sync_api import expect

    page, folder = open_release(LAB07, {})
    with screenshot_on_failure(page, LAB07):
        expect_no_traceback(page)
        assert not (folder / "predictions.json").exists(), "a lock locked itself without a click"
        act1 = lock_box(page, "Trained exactly like the dense 8B")
        act2 = lock_box(page, "raise EP from 8 (one node)")
        act3 = lock_box(page, "64 experts, one per GPU, dropless")
        configurator = instrument(page, "3D-parallelism configurator")
        explorer, load = instrument(page, "All-to-all explorer"), instrument(page, "Expert load")
        for inst in (configurator, explorer, load):
            expect_gated(inst)

        # Act I: pure data parallelism does not fit; three presses on EP (1 -> 2 -> 4 -> 8) spread the experts
        lock_prediction(page, act1, "memory about 5x", configurator)
        expect_gated(explorer)
        oom = configurator.locator(".course-failure-out_of_memory")
        expect(oom).to_be_visible(timeout=30_000)
        assert card_number(configurator, "memory") > 190  # 4 bytes x 47.5 B weights and gradients alone
        press_on_slider(page, configurator, "ep", "ArrowRight", 3)
        expect(readout(configurator, "ep")).to_have_text("8", timeout=30_000)
        expect(oom).to_have_count(0, timeout=30_000)
        wait_until(page, lambda: card_number(configurator, "memory") < 40, "the memory card to fall under 40 GB")

        # Act II: EP 8 sits inside one node; one press leaves it and the all-to-all outlasts the expert compute
        lock_prediction(page, act2, "it jumps when the experts first span two nodes", explorer)
        bound = explorer.locator(".course-failure-all_to_all_bound")
        expect(explorer.locator(".course-card-alltoall .course-card-value")).to_contain_text("ms", timeout=30_000)
        expect(bound).to_have_count(0, timeout=30_000)
        press_on_slider(page, explorer, "ep", "ArrowRight")
        expect(readout(explorer, "ep")).to_have_text("16", timeout=30_000)
        expect(bound).to_be_visible(timeout=30_000)
        wait_until(page, lambda: card_number(explorer, "alltoall") == pytest.approx(4 * 8192 * 4 * 8192 / 50e9 * 1e3,
                                                                                      rel=0.01),
                   "the all-to-all card to show 21.5 ms")
        explorer.locator(".course-control-overlap input[type=checkbox]").click()
        choose(explorer, "routing", "one copy per node")
        expect(bound).to_have_count(0, timeout=30_000)  # DeepEP's one copy per node, hidden behind compute
        choose(explorer, "model", "deepseek-v3")
        expect(explorer.locator(".course-failure-experts_do_not_fit")).to_be_visible(timeout=30_000)
        press_on_slider(page, explorer, "pp", "ArrowRight", 4)  # PP 16 shares the layers: the experts fit
        expect(readout(explorer, "pp")).to_have_text("16", timeout=30_000)
        expect(explorer.locator(".course-failure-experts_do_not_fit")).to_have_count(0, timeout=30_000)

        # Act III: ten presses on the skew (0 -> 0.5) make the hot expert's GPU the straggler
        lock_prediction(page, act3, "about 40 % longer", load)
        straggler = load.locator(".course-failure-straggler_bound")
        expect(straggler).to_have_count(0, timeout=30_000)
        press_on_slider(page, load, "skew", "ArrowRight", 10)
        expect(readout(load, "skew")).to_have_text("0.50", timeout=30_000)
        expect(straggler).to_be_visible(timeout=30_000)
        weights = [i ** -0.5 for i in range(1, 65)]
        hot = 64 * weights[0] / sum(weights)
        wait_until(page, lambda: card_number(load, "share") == pytest.approx(
            100 * (hot - 1) * 0.4 / (1 + (hot - 1) * 0.4), abs=0.1), "the waiting share to show 60 %")
        load.locator(".course-control-dropless input[type=checkbox]").click()  # capacity 1.25: drops instead
        expect(load.locator(".course-failure-tokens_dropped")).to_be_visible(timeout=30_000)
        expect(straggler).to_have_count(0, timeout=30_000)

        saved = read_json(folder / "predictions.json")
        assert {k: v["value"] for k, v in saved.items()} == {"lab07/act1": "memory-up", "lab07/act2": "jumps", "lab07/act3": "expert-part"}
        expect_no_traceback(page)
        ARTIFACTS.mkdir(exist_ok=True)
        for name, inst in (("configurator", configurator), ("alltoall", explorer), ("expert_load", load)):
            inst.scroll_into_view_if_needed()
            inst.screenshot(path=str(ARTIFACTS / f"jupyterlab_lab07_{name}.png"))

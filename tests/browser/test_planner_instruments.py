"""Real JupyterLab: the pipeline timeline and the configurator + map redraw when a slider moves.

Screenshots go to test-artifacts/ (ignored by git). Prints the slider-move ->
redrawn-chart latency of the timeline (keyboard step -> first change inside its SVG).
"""

from __future__ import annotations

import statistics

import pytest


from .conftest import ARTIFACTS

pytestmark = pytest.mark.browser

SVG_STATE = """([sel, i]) => {
    const inst = document.querySelectorAll(sel)[i];
    return [...inst.querySelectorAll('.bqplot svg')].map(s => s.innerHTML.length + ':' + s.innerHTML.slice(-4000)).join('|');
}"""

ARM_TIMER = """([sel, i]) => {
    const chart = document.querySelectorAll(sel)[i].querySelector('.bqplot svg');
    window.__redraw = {start: null, end: null};
    if (!window.__keyListener2) {
        window.__keyListener2 = true;
        document.addEventListener('keydown', () => {
            if (window.__redraw && window.__redraw.start === null) window.__redraw.start = performance.now();
        }, true);
    }
    if (window.__observer2) window.__observer2.disconnect();
    window.__observer2 = new MutationObserver(() => {
        if (window.__redraw.start !== null && window.__redraw.end === null) window.__redraw.end = performance.now();
    });
    window.__observer2.observe(chart, {attributes: true, subtree: true, childList: true, characterData: true});
}"""

INSTRUMENT = ".course-instrument"


def _step_slider(page, index, control, key="ArrowRight"):
    inst = page.locator(INSTRUMENT).nth(index)
    inst.scroll_into_view_if_needed()
    handle = inst.locator(f".course-control-{control} .noUi-handle").first
    handle.focus()
    page.keyboard.press(key)


def test_pipeline_timeline_redraws(lab_notebook):
    page = lab_notebook("notebooks/explore_pipeline.ipynb")
    assert "Traceback" not in page.locator(".jp-Notebook").inner_text()
    inst = page.locator(INSTRUMENT).first
    inst.locator(".bqplot svg").first.wait_for(timeout=60_000)
    assert inst.locator(".course-failure").count() == 0
    before = page.evaluate(SVG_STATE, [INSTRUMENT, 0])
    _step_slider(page, 0, "stages")
    page.wait_for_function(f"(b) => ({SVG_STATE})(['{INSTRUMENT}', 0]) !== b", arg=before, timeout=30_000)
    latencies = []
    for i in range(10):
        page.evaluate(ARM_TIMER, [INSTRUMENT, 0])
        _step_slider(page, 0, "microbatches", "ArrowRight" if i % 2 == 0 else "ArrowLeft")
        page.wait_for_function("() => window.__redraw.end !== null", timeout=30_000)
        timing = page.evaluate("() => window.__redraw")
        latencies.append(timing["end"] - timing["start"])
    # the noticed bug: on the opening 1F1B schedule the chunks slider never redrew; now it selects the
    # interleaved schedule and the chart changes (stages back to 4 first: interleaving needs m = 8 a multiple of p)
    before = page.evaluate(SVG_STATE, [INSTRUMENT, 0])
    _step_slider(page, 0, "stages", "ArrowLeft")
    page.wait_for_function(f"(b) => ({SVG_STATE})(['{INSTRUMENT}', 0]) !== b", arg=before, timeout=30_000)
    before = page.evaluate(SVG_STATE, [INSTRUMENT, 0])
    _step_slider(page, 0, "chunks")
    page.wait_for_function(f"(b) => ({SVG_STATE})(['{INSTRUMENT}', 0]) !== b", arg=before, timeout=30_000)
    # ZB-H1 and DualPipe draw without a failure banner
    for schedule in ("zb-h1", "dualpipe"):
        before = page.evaluate(SVG_STATE, [INSTRUMENT, 0])
        inst.locator(".course-control-schedule button", has_text=schedule).click()
        page.wait_for_function(f"(b) => ({SVG_STATE})(['{INSTRUMENT}', 0]) !== b", arg=before, timeout=30_000)
        assert inst.locator(".course-failure").count() == 0, schedule
    ARTIFACTS.mkdir(exist_ok=True)
    inst.screenshot(path=str(ARTIFACTS / "jupyterlab_pipeline_timeline.png"))
    print(f"\npipeline timeline: slider move -> redrawn chart median {statistics.median(latencies):.1f} ms "
          f"(min {min(latencies):.1f}, max {max(latencies):.1f}, {len(latencies)} moves)")
    assert inst.locator(".course-failure").count() == 0


def test_configurator_moves_the_map(lab_notebook):
    page = lab_notebook("notebooks/explore_3d_parallelism.ipynb")
    assert "Traceback" not in page.locator(".jp-Notebook").inner_text()
    page.locator(INSTRUMENT).nth(1).locator(".bqplot svg").first.wait_for(timeout=60_000)
    configurator_before = page.evaluate(SVG_STATE, [INSTRUMENT, 0])
    map_before = page.evaluate(SVG_STATE, [INSTRUMENT, 1])
    _step_slider(page, 0, "pp", "ArrowLeft")  # PP 8 -> 7: the map follows, 7 does not divide 1,024 GPUs
    page.wait_for_function(f"(b) => ({SVG_STATE})(['{INSTRUMENT}', 1]) !== b", arg=map_before, timeout=30_000)
    assert page.evaluate(SVG_STATE, [INSTRUMENT, 0]) != configurator_before
    configurator = page.locator(INSTRUMENT).nth(0)
    configurator.locator(".course-failure-gpus_mismatch").first.wait_for(timeout=30_000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "jupyterlab_explore_3d_parallelism.png"), full_page=True)
    page.locator(INSTRUMENT).nth(1).screenshot(path=str(ARTIFACTS / "jupyterlab_parallel_map.png"))


def test_scaling_explorer_banner_appears_when_traffic_leaves_the_node(lab_notebook):
    page = lab_notebook("notebooks/explore_data_parallel.ipynb")
    assert "Traceback" not in page.locator(".jp-Notebook").inner_text()
    explorer = page.locator(INSTRUMENT).first
    explorer.locator(".bqplot svg").first.wait_for(timeout=60_000)
    assert explorer.locator(".course-failure").count() == 0  # 8 GPUs: all on NVLink
    # it opens on InfiniBand NDR between nodes; the what-if "NVLink only" is what breaks beyond one node
    explorer.locator(".course-control-fabric select").first.select_option(index=0)  # "NVLink 4 only (inside one node)"
    before = page.evaluate(SVG_STATE, [INSTRUMENT, 0])
    _step_slider(page, 0, "gpus")  # 8 -> 16 GPUs: two nodes
    explorer.locator(".course-failure-forced_onto_infiniband").first.wait_for(timeout=30_000)
    assert page.evaluate(SVG_STATE, [INSTRUMENT, 0]) != before
    ARTIFACTS.mkdir(exist_ok=True)
    explorer.screenshot(path=str(ARTIFACTS / "jupyterlab_scaling_explorer.png"))
    page.locator(INSTRUMENT).nth(1).scroll_into_view_if_needed()
    page.locator(INSTRUMENT).nth(1).screenshot(path=str(ARTIFACTS / "jupyterlab_efficiency_plot.png"))


def test_sync_audit_renders(lab_notebook):
    page = lab_notebook("notebooks/explore_sync.ipynb")
    audit = page.locator(INSTRUMENT).first
    audit.locator(".bqplot rect.bar").first.wait_for(timeout=60_000)
    before = page.evaluate(SVG_STATE, [INSTRUMENT, 0])
    _step_slider(page, 0, "slowdown")
    page.wait_for_function(f"(b) => ({SVG_STATE})(['{INSTRUMENT}', 0]) !== b", arg=before, timeout=30_000)
    ARTIFACTS.mkdir(exist_ok=True)
    audit.screenshot(path=str(ARTIFACTS / "jupyterlab_sync_audit.png"))
    assert audit.locator(".course-failure").count() == 0

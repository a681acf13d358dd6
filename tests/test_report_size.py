"""A report of many results stays small: figures as linked files, the hottest source lines inline,
each full source view in its own page (issue 15: report.html under 3 MB for the main job)."""

from gpusim.timing.driver import run_workload
from gpusim.viz.report import COMPACT_ABOVE, COMPACT_SOURCE_LINES, write_outputs


def test_many_results_give_a_compact_report(tmp_path):
    result = run_workload("sgemm_maxas_64", "h100", 64)
    n = COMPACT_ABOVE + 1
    written = write_outputs([result] * n, tmp_path)
    html = written["report"].read_text()
    pages = sorted((tmp_path / "source").glob("*.html"))
    assert len(pages) == n
    assert html.count('href="source/') == n and "<svg" in html  # the one breakdown plot stays inline
    assert html.count('class="sass"') == n * min(COMPACT_SOURCE_LINES, len(result.stalls_per_pc))
    assert pages[0].read_text().count('class="sass"') == len(result.stalls_per_pc)
    assert len(html) < 40_000 * n  # per result: tables and links, no inline figures or full listings

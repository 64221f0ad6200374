"""Where a site build's time goes, and the order that spends less of it: the exports that run a real
model (notebooks 12, 13, 10 and 9) start first, so the short ones fill the other cores
instead of making notebook 12 wait for the eleven before it; and the build says how long it took
and which exports took longest."""

from __future__ import annotations

import pytest

from lab.teach import course
from publish import site

COURSE = [site.NOTEBOOKS / file for file, _, _ in course.NOTEBOOKS]


def test_the_longest_exports_are_notebooks_of_the_course():
    assert set(site.LONGEST_EXPORTS) <= {notebook.stem for notebook in COURSE}


def test_the_longest_exports_start_first_and_the_rest_keep_the_courses_order():
    ordered = site.export_order(COURSE)
    longest = len(site.LONGEST_EXPORTS)
    assert [notebook.stem for notebook in ordered[:longest]] == list(site.LONGEST_EXPORTS)
    assert sorted(ordered) == sorted(COURSE)
    rest = [notebook for notebook in COURSE if notebook.stem not in site.LONGEST_EXPORTS]
    assert ordered[longest:] == rest


def test_the_build_starts_its_exports_longest_first(monkeypatch, tmp_path):
    """With one export at a time the exports run in the order they start."""
    started = []

    def export_notebook(notebook, cwd):
        started.append(notebook.stem)
        return ""

    monkeypatch.setattr(site, "export_notebook", export_notebook)
    monkeypatch.setattr(site, "EXPORTS_AT_ONCE", 1)
    seconds = {}
    # the empty pages are refused once every export has run
    with pytest.raises(site.SiteBuildError):
        site.notebook_pages(tmp_path, COURSE, course_chrome=True, pages_only=False, cwd=None, seconds=seconds)
    assert started[: len(site.LONGEST_EXPORTS)] == list(site.LONGEST_EXPORTS)
    assert len(started) == len(COURSE) and set(seconds) == set(started)


@pytest.mark.parametrize(("seconds", "said"), [(48.4, "48 s"), (60, "1 min 0 s"), (680, "11 min 20 s")])
def test_a_duration_reads_as_a_person_says_it(seconds, said):
    assert site.minutes(seconds) == said

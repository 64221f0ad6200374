"""The course-wide presenter toggle shown at the foot of every course page (widgets/presenter.js).

It syncs no traits: presenter mode belongs to the page a teacher has open (a class on its root,
remembered in the browser), so the toggle works the same on a static page with no kernel."""

from __future__ import annotations

import anywidget

from ._bundle import bundle, stylesheet


class PresenterToggle(anywidget.AnyWidget):
    """One button that enlarges the whole course page for a projector (prose, tables, charts and
    widgets together); a link with ?present or #present opens a page that way."""

    _esm = bundle("presenter.js")
    _css = stylesheet()

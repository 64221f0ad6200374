"""Publishing the course: what turns the notebooks and widgets into files a reader opens.

- site.py: the static, offline site (`python3 labctl.py site`, `python -m publish.site`): every
  notebook exported by marimo, marimo's front-end copied beside it, the explainers and an index.
- marimo_bundle.py: marimo's front-end bundled with esbuild (through Deno) into one module per layout.
- export.py: one notebook, the course's or an author's own, as an offline page in a folder of its
  own (`labctl.py export`).
- standalone.py: each widget as one self-contained explainer page that opens from disk
  (`labctl.py explainer`).
- handouts.py: notebooks 1..12's exercises, as a workshop booklet or per-notebook sheets, printed to PDF by
  headless Chromium (`labctl.py handouts`).

May import: lab, widgets (the figures and their JS, bundled by widgets._bundle), classroom (the
server's rule for content-hashed names, the room's page theme, and `site serve`, which hands over to
the server) and bench.harness (Chromium, for the handouts). lab, widgets and classroom never import
publish.
"""

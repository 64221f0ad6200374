"""The widget bundler (widgets/_bundle.py) on tiny fake module trees, and on the real widgets.

Each fake tree lives in tmp_path, so every rule the bundler enforces is shown failing on the
smallest input that breaks it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from widgets._bundle import HERE, BundleError, bundle

WIDGETS = ("nibble.js", "scale_lab.js", "ownership.js", "q4k_explorer.js")


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return root


def _sections(text: str) -> list[str]:
    return re.findall(r"^// ---- (\S+) ----$", text, re.MULTILINE)


def test_modules_come_after_what_they_import_and_appear_once(tmp_path):
    root = _tree(
        tmp_path,
        {
            "lib/base.js": "export const ONE = 1;\n",
            "lib/twice.js": 'import { ONE } from "./base.js";\nexport function two() {\n  return ONE + ONE;\n}\n',
            "lib/deep/three.js": (
                'import {\n  ONE,\n} from "../base.js";\nimport { two } from "../twice.js";\n'
                "export function three() {\n  return two() + ONE;\n}\n"
            ),
            "widget.js": (
                'import { three } from "./lib/deep/three.js";\nimport { ONE } from "./lib/base.js";\n'
                "export default { render: () => three() + ONE };\n"
            ),
        },
    )
    text = bundle("widget.js", root=root)
    assert _sections(text) == ["lib/base.js", "lib/twice.js", "lib/deep/three.js", "widget.js"]
    assert text.count("export const ONE") == 0 and text.count("const ONE = 1;") == 1
    assert "import" not in text
    assert "export default { render" in text  # the widget keeps its own exports


def test_a_module_nobody_imports_is_left_out(tmp_path):
    root = _tree(
        tmp_path,
        {
            "used.js": "export const A = 1;\n",
            "unused.js": "export const B = 2;\n",
            "widget.js": 'import { A } from "./used.js";\nexport default { A };\n',
        },
    )
    assert _sections(bundle("widget.js", root=root)) == ["used.js", "widget.js"]


def test_importing_a_name_the_module_does_not_export_raises(tmp_path):
    root = _tree(
        tmp_path,
        {
            "lib.js": "export const A = 1;\nconst hidden = 2;\n",
            "widget.js": 'import { A, hidden } from "./lib.js";\nexport default { A };\n',
        },
    )
    with pytest.raises(BundleError, match=r"widget\.js imports hidden from lib\.js, which does not export it"):
        bundle("widget.js", root=root)


def test_an_import_cycle_raises_and_names_the_cycle(tmp_path):
    root = _tree(
        tmp_path,
        {
            "a.js": 'import { B } from "./b.js";\nexport const A = 1;\n',
            "b.js": 'import { C } from "./c.js";\nexport const B = 2;\n',
            "c.js": 'import { A } from "./a.js";\nexport const C = 3;\n',
            "widget.js": 'import { A } from "./a.js";\nexport default { A };\n',
        },
    )
    with pytest.raises(BundleError, match=r"import cycle: a\.js -> b\.js -> c\.js -> a\.js"):
        bundle("widget.js", root=root)


@pytest.mark.parametrize(
    "statement",
    [
        'import { x } from "lodash";',
        'import { x } from "https://cdn.example.org/x.js";',
        'import { x } from "/abs/x.js";',
        'import x from "//cdn.example.org/x.js";',
        'import "https://cdn.example.org/side-effect.js";',
    ],
)
def test_a_bare_or_url_import_raises(tmp_path, statement):
    root = _tree(tmp_path, {"widget.js": f"{statement}\nexport default {{}};\n"})
    with pytest.raises(BundleError, match="only relative imports"):
        bundle("widget.js", root=root)


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ('import lib from "./lib.js";', "only `import { names }"),
        ('import * as lib from "./lib.js";', "only `import { names }"),
        ('import { A as renamed } from "./lib.js";', "renaming imports"),
        ('const lib = await import("./lib.js");', "dynamic import"),
    ],
)
def test_import_forms_that_cannot_be_joined_raise(tmp_path, statement, reason):
    root = _tree(tmp_path, {"lib.js": "export const A = 1;\n", "widget.js": f"{statement}\nexport default {{}};\n"})
    with pytest.raises(BundleError, match=re.escape(reason)):
        bundle("widget.js", root=root)


def test_a_missing_module_raises(tmp_path):
    root = _tree(tmp_path, {"widget.js": 'import { A } from "./nowhere.js";\nexport default { A };\n'})
    with pytest.raises(BundleError, match="does not exist"):
        bundle("widget.js", root=root)


def test_two_modules_declaring_the_same_top_level_name_raise(tmp_path):
    root = _tree(
        tmp_path,
        {
            "a.js": "function check(x) {\n  return x;\n}\nexport const A = check(1);\n",
            "b.js": "class check {}\nexport const B = 2;\n",
            "widget.js": 'import { A } from "./a.js";\nimport { B } from "./b.js";\nexport default { A, B };\n',
        },
    )
    with pytest.raises(BundleError, match=r"'check' is declared in a\.js and in b\.js"):
        bundle("widget.js", root=root)


def test_a_widget_name_that_collides_with_an_imported_module_raises(tmp_path):
    root = _tree(
        tmp_path,
        {
            "lib.js": "export const A = 1;\nlet render = 0;\n",
            "widget.js": 'import { A } from "./lib.js";\nfunction render() {}\nexport default { render };\n',
        },
    )
    with pytest.raises(BundleError, match=r"'render' is declared in lib\.js and in widget\.js"):
        bundle("widget.js", root=root)


def test_a_re_export_cannot_be_bundled(tmp_path):
    root = _tree(
        tmp_path,
        {
            "lib.js": "export const A = 1;\n",
            "index.js": 'export * from "./lib.js";\n',
            "widget.js": 'import { A } from "./index.js";\nexport default { A };\n',
        },
    )
    with pytest.raises(BundleError, match="re-exports"):
        bundle("widget.js", root=root)


@pytest.mark.parametrize("widget_file", WIDGETS)
def test_each_real_widget_bundles_every_module_it_reaches_once(widget_file):
    """The real bundles: ui.js and the codec modules each once, the widget last, no import left."""
    text = bundle(widget_file)
    sections = _sections(text)
    assert sections[-1] == widget_file and sections[-2] == "ui.js"
    assert len(sections) == len(set(sections))
    assert all(name.startswith("codec/") for name in sections[:-2])
    assert "codec/index.js" not in sections  # widgets import from the defining module, not the index
    assert not re.search(r"^import\b", text, re.MULTILINE)
    for name in sections:
        assert (HERE / name).is_file()


@pytest.mark.parametrize(
    ("lib", "reason"),
    [
        ("export default 1;\nexport const A = 1;\n", "may only export declarations"),
        ("const A = 1;\nexport { A };\n", "may only export declarations"),
        ("export const { A } = { A: 1 };\n", "by destructuring"),
    ],
)
def test_an_imported_module_that_cannot_be_joined_raises(tmp_path, lib, reason):
    root = _tree(tmp_path, {"lib.js": lib, "widget.js": 'import { A } from "./lib.js";\nexport default { A };\n'})
    with pytest.raises(BundleError, match=re.escape(reason)):
        bundle("widget.js", root=root)


def test_an_import_from_outside_the_root_raises(tmp_path):
    _tree(tmp_path, {"outside.js": "export const A = 1;\n"})
    root = _tree(tmp_path / "root", {"widget.js": 'import { A } from "../outside.js";\nexport default { A };\n'})
    with pytest.raises(BundleError, match="outside"):
        bundle("widget.js", root=root)

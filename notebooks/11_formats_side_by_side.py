import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="11 · Formats side by side")


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab.device import mlx_support
    from lab.numbers import format_number
    from lab.study import compare
    from lab.teach.charts import block_outlier_chart, front_chart

    return (
        block_outlier_chart,
        compare,
        format_number,
        front_chart,
        mlx_support,
        mo,
    )


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 11 · Formats side by side

    Every format in the lab on the same weights. Three questions: what does each one cost in
    bits and give back in accuracy; what does one outlier do to the weights that share its
    block; and where does one byte of each GGUF layout land. Last, which of these formats the
    installed MLX can actually run.
    """)
    return


@app.cell(hide_code=True)
def _(compare):
    weights = compare.sources()
    # cache=True: each source's errors are kept on disk (lab.study.cache), keyed by its bytes.
    error_rows = compare.pareto_front(compare.error_rows(weights, cache=True))
    return error_rows, weights


@app.cell(hide_code=True)
def _(weights):
    from widgets.choice import Control, PrecomputedChoice

    # Every source's chart is computed for the static page, so the menu works there too; a live page
    # computes the one shown and each other when it is picked.
    source_pick = PrecomputedChoice("pareto", [Control("source", "weights", list(weights), list(weights)[0])])
    return Control, PrecomputedChoice, source_pick


@app.cell(hide_code=True)
def _(error_rows, front_chart, mo, source_pick):
    def _view(source):
        _front = [row["title"] for row in error_rows if row["source"] == source and row["on_front"]]
        _skipped = sorted({row["title"] for row in error_rows if row["source"] == source and row["skipped"]})
        return mo.vstack(
            [
                front_chart(error_rows, source, error="relative_error", error_words="relative error", note=""),
                mo.md(
                    f"On the front here: {', '.join(_front)}."
                    + (f" Rows too short for the blocks of: {', '.join(_skipped)}." if _skipped else "")
                ),
            ]
        )


    mo.vstack(
        [
            mo.md(
                "## Error against cost\n\nRelative error ‖ŵ − w‖ / ‖w‖ against the bits each format "
                "stores per weight. A format is on the **Pareto front** (its points joined by a line) when no other "
                "format is both as cheap and as accurate. The real tensors are the first 64 rows of "
                "three all-MiniLM-L6-v2 weights; the synthetic ones are N(0, 1) and a heavy-tailed "
                "Student t with 3 degrees of freedom. Bits per weight count MLX affine's scale and bias as "
                "bfloat16, as a bfloat16 checkpoint stores them; notebooks 9 and 10 count this float32 "
                "model's as float32 (lab.study.accounting)."
            ),
            mo.ui.anywidget(source_pick),
            mo.Html(source_pick.outcomes(["source"], _view)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(block_outlier_chart, compare, mo):
    outliers = compare.outlier_rows()
    mo.vstack(
        [
            mo.md(
                f"## One outlier in a block\n\nA row of N(0, 1) with weight {compare.OUTLIER_POSITION} "
                f"set to {compare.OUTLIER_VALUE:g}. The bars are the RMS error of the *other* weights "
                "of the block that holds it, with and without the outlier. A format with one scale "
                "per block stretches that scale to reach 20 and the others lose their resolution; "
                "Q4_K, Q6_K and IQ4_XS give each 16- or 32-weight subblock its own scale, so the "
                "damage stays local, and the 8-bit formats have steps to spare."
            ),
            block_outlier_chart(outliers),
        ]
    )
    return


@app.cell(hide_code=True)
def _(Control, PrecomputedChoice):
    # All 16 positions are traced for the static page, so the slider works there too; a live page
    # traces the one shown and each other when it is picked.
    payload_pick = PrecomputedChoice(
        "byte-trace",
        [Control("position", "position in the payload (byte index)", [str(n) for n in range(16)], "0", kind="slider")],
    )
    return (payload_pick,)


@app.cell(hide_code=True)
def _(compare, format_number, mo, payload_pick):
    def _table(position):
        _trace = compare.byte_trace(0xA5, position)
        _rows = "\n".join(
            f"| {row['title']} | {row['block_byte']} | {row['nibble']} ({row['nibble_value']}) | {row['weight']} "
            f"| {row['code']} | {format_number(row['value'], 6)} | {row['owner']} |"
            for row in _trace
        )
        return mo.md(
            "| format | block byte | nibble | weight | code | value | owned by |\n"
            "|---|---|---|---|---|---|---|\n" + _rows
        )


    trace = compare.byte_trace(0xA5, 0)  # the position the slider starts at
    _layouts = len({row["title"] for row in trace})
    mo.vstack(
        [
            mo.md(
                f"## One byte, {_layouts} layouts\n\nThe byte 0xA5 (low nibble 5, high nibble 10) "
                "written at the same position in the payload of one block of each GGUF layout; the "
                "slider picks the position, counted in bytes from the payload's start. Where its "
                "nibbles land is read from the lab's decoder, by setting one nibble at a time; the "
                "tests check every lane against gguf-py's. Q4_0, Q4_1, IQ4_NL and MXFP4 pair weight "
                "j with j + 16, and IQ4_XS does within each subblock of 32; Q4_K pairs j with j + 32, "
                "in neighbouring subblocks with different "
                "scales; Q6_K's byte holds only the low four bits of two 6-bit codes, 64 apart, and "
                "Q5_0, Q5_1 and Q5_K's only the low four bits of two 5-bit codes, whose fifth bits sit "
                "in the qh bytes. Q3_K and Q2_K are not here: their payload bytes hold four 2-bit codes "
                "each, not two nibbles (notebook 6's block explorer shows them)."
            ),
            mo.ui.anywidget(payload_pick),
            mo.Html(payload_pick.outcomes(["position"], lambda _position: _table(int(_position)))),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mlx_support, mo):
    support = mlx_support()
    _rows = "\n".join(
        f"| {row['title']} | {row['mlx_mode']} | {row['gguf_type']} | {row['mx_load']} | {row['returned'] or '—'} "
        f"| {'—' if row['max_abs_diff'] is None else format(row['max_abs_diff'], '.3g')} | {row['error'] or '—'} |"
        for row in support
    )
    mo.md(
        f"## What MLX runs\n\nMeasured now with MLX {support[0]['mlx_version']}: each format's MLX "
        "mode, and for each GGUF type what `mx.load` returns for a small GGUF file holding it, "
        "set against gguf-py's decode of the same bytes (largest absolute difference).\n\n"
        "| format | MLX mode | GGUF type | mx.load gives | arrays | max abs diff | error |\n"
        "|---|---|---|---|---|---|---|\n" + _rows + "\n\n"
        '"no arrays" means the tensor vanished from what `mx.load` returned, without an error. '
        "A quantized triple is MLX's affine layout: its float16 scales and biases round the "
        "GGUF block's scale, which is where the small differences come from. Notebook 5's "
        "on-device pane explains the Q4_K difference."
    )
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=11))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. On N(0, 1), six formats spend 4.5 bits per weight. Which one is on the front? *(Check the
       list under the chart: Q4_K, whose subblocks of 32 each get their own scale and minimum.)*
    2. Switch to the Student t weights. Which 4.5-bit format is on the front now? *(Check:
       NVFP4. Heavy tails put a large weight in many blocks; E2M1's grid, dense near zero, keeps
       the small weights of such a block finer than Q4_K's evenly spaced steps.)*
    3. Move the byte to payload position 15. Which layout's two weights lie furthest apart?
       *(Check the weight column: Q6_K's, 64 apart, where the others are 16 or 32.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("11_formats_side_by_side.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()

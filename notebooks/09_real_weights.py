import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="9 · Real weights")


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab.numbers import format_number
    from lab.study import accounting, real_weights
    from lab.teach.charts import outlier_chart, tensor_error_chart
    from lab.text import code_name

    return (
        accounting,
        code_name,
        format_number,
        mo,
        outlier_chart,
        real_weights,
        tensor_error_chart,
    )


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 9 · Real weights: which format hurts which tensor

    Gaussian noise is a polite test. Real weight matrices have outliers, rows of different
    scales and shapes that do not divide neatly into blocks. This notebook takes a real
    transformer, all-MiniLM-L6-v2 (22.7 M parameters, read from its safetensors file), and
    runs every 2-D weight through every format the lab knows.

    For each tensor and format it measures the **relative RMS error** ‖ŵ − w‖ / ‖w‖, the
    **largest single error**, the **outlier share** (weights beyond 6 × the tensor's RMS, the
    ones that stretch a block's scale) and the **bits per weight** actually spent.
    """)
    return


@app.cell(hide_code=True)
def _(mo, real_weights):
    available = real_weights.real_model_available()
    mo.stop(not available, mo.md(f"**The real model is not installed.** {real_weights.INSTALL_HINT}"))
    weights = real_weights.load_weights()
    return (weights,)


@app.cell(hide_code=True)
def _(mo, real_weights, weights):
    _steps = sum(1 for w in weights.values() if w.ndim == 2) * len(real_weights.study_rows())
    # The bar goes when the work is done: the tables below are the result, and a finished bar
    # (with its timing) would only make every export of this page different.
    # cache=True: each (tensor, format) result is kept on disk (lab.study.cache), so opening
    # this page again reads the numbers back in well under a second instead of recomputing them.
    with mo.status.progress_bar(total=_steps, title="Quantizing every tensor in every format", remove_on_exit=True) as _bar:
        report = real_weights.evaluate_model(
            weights, progress=lambda done, total, label: _bar.update(subtitle=label), cache=True
        )
    return (report,)


@app.cell(hide_code=True)
def _(accounting, format_number, mo, report):
    _float32, _bfloat16 = accounting.FLOAT32, accounting.BFLOAT16
    _rows = "\n".join(
        f"| {row['format']} | {row['relative_rmse']:.4f} | {format_number(round(row['max_abs_error'], 4))} "
        f"| {row['bits_per_weight']:.3f} | {row['coverage']:.1%} |"
        for row in report.summary_records()
    )
    mo.md(
        "## The whole model, format by format\n\n"
        "| format | relative RMSE | max error | bits/weight (float32 scales) | share of weights it could take |\n|---|---|---|---|---|\n"
        + _rows
        + "\n\nThe floor scale rule (`ocp`) saturates the largest weight of a block, which shows in "
        "the max error; the ceil rule (`mlx`) never saturates but coarsens the rest. The scale search "
        "tries neighbouring scales per block and keeps the best: the scale lab's lesson, applied to "
        "every block, with blocks MLX still decodes unchanged.\n\n"
        "MLX keeps an affine group's scale and bias in the weights' own dtype. This checkpoint is "
        "float32, so here they cost 64 bits a group: 4-bit g64 spends "
        f"4 + 64/64 = {accounting.bits_per_weight('affine4_g64', _float32):g} bits per weight and g128 "
        f"{accounting.bits_per_weight('affine4_g128', _float32):g}. Notebook 7's grid is for a bfloat16 "
        "checkpoint, where they cost 32 bits a group: 4-bit g64 is "
        f"{accounting.bits_per_weight('affine4_g64', _bfloat16):g} there. Notebook 10 counts this model's "
        "scales as float32 too. The other formats fix their scales' type (MXFP4's E8M0 byte, NVFP4's "
        "E4M3, GGUF's float16), so the checkpoint's dtype leaves theirs alone."
    )
    return


@app.cell(hide_code=True)
def _(mo, report):
    from widgets.choice import Control, PrecomputedChoice

    # Every format's view below has its outcome, so the menu works on the static page too. A live
    # page computes only the format shown, and each other one when it is picked (widgets/choice.py).
    format_choice = PrecomputedChoice(
        "real-weights",
        [Control("format", "format", [row["format"] for row in report.summary_records()], "Q4_K")],
    )
    format_menu = mo.ui.anywidget(format_choice)
    return (format_menu,)


@app.cell(hide_code=True)
def _(
    code_name,
    format_menu,
    format_number,
    mo,
    outlier_chart,
    report,
    tensor_error_chart,
):
    _records = report.records()


    def _view(name):
        _chosen = [row for row in _records if row["format"] == name]
        _measured = sorted((row for row in _chosen if not row["skipped"]), key=lambda row: -row["relative_rmse"])
        _rows = "\n".join(
            f"| {code_name(row['tensor'])} | {'×'.join(str(n) for n in row['shape'])} | "
            f"{row['relative_rmse']:.4f} | {format_number(round(row['max_abs_error'], 4))} | {row['outlier_share']:.3%} |"
            for row in _measured
        )
        # Skipped tensors are listed under their reason, below the table: a long reason in a table
        # column made every row of it tall on a phone.
        _reasons = {}
        for _row in _chosen:
            if _row["skipped"]:
                _reasons.setdefault(_row["skipped"].removeprefix("skipped: "), []).append(code_name(_row["tensor"]))
        _skipped = "".join(
            f"\n\n**Skipped, {len(_names)} of {len(_chosen)}**, {_reason}: {', '.join(_names)}."
            for _reason, _names in _reasons.items()
        )
        return mo.vstack(
            [
                mo.md(f"**{name}.** Each bar is one tensor, coloured by its role in the layer; the scatter asks whether tensors with more outliers lose more."),
                mo.as_html(tensor_error_chart(_records, name)),
                mo.as_html(outlier_chart(_records, name)),
                mo.md(
                    f"**{name}, tensor by tensor,** worst first.\n\n| tensor | shape | relative RMSE | max error | outlier share |\n|---|---|---|---|---|\n"
                    + _rows
                    + _skipped
                ),
            ]
        )


    mo.vstack(
        [
            mo.md(
                "## One format at a glance, tensor by tensor\n\nA skipped tensor is one the format "
                "cannot take: Q4_K needs rows that are a multiple of 256, MLX's affine modes a multiple of the "
                "group size (MLX's converter silently leaves such layers in float; a GGUF converter stores them "
                "in another type)."
            ),
            format_menu,
            mo.Html(format_menu.outcomes(["format"], _view)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=9))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. Which 4.5-bit format has the lowest overall error here, and does it cover the whole
       model? *(Check the first table: Q4_K's coverage column.)*
    2. Pick MXFP4 (ocp), then MXFP4 (mlx). Which has the larger max error, and why?
       *(Check: the floor rule saturates outliers.)*
    3. How much does the scale search buy NVFP4? Is it free in bits per weight?
       *(Check: lower relative RMSE, same bits per weight.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("09_real_weights.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()

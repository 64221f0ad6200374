import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="7 · Capacity and cost")


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab.numbers import format_number
    from lab.teach import sizes
    from lab.teach.charts import bits_per_weight_chart

    return bits_per_weight_chart, format_number, mo, sizes


@app.cell(hide_code=True)
def _(format_number, mo, sizes):
    _table = sizes.seven_billion_table()
    mo.md(
        f"""
        # 7 · Capacity and cost

        Storage arithmetic is easy and worth doing. For a dense model of seven billion weights,
        counting payload only, in decimal gigabytes:

        | storage | payload, GB | bits per weight |
        |---|---|---|
        | BF16 | **{format_number(_table['BF16'])}** | 16 |
        | ideal 4-bit | **{format_number(_table['ideal 4-bit'])}** | 4 |
        | MXFP4 | {format_number(_table['MXFP4'])} | 4.25 |
        | Q4_K (every weight) | **{format_number(_table['Q4_K'])}** | 4.5 |
        | NVFP4 (block scales) | {format_number(_table['NVFP4'])} | 4.5 |

        7 × 10⁹ × 4.5 / 8 / 10⁹ = 3.9375. Real files add higher-precision tensors and metadata;
        runtime adds activations, scratch space, the KV cache and any copies the loader makes.
        """
    )
    return


@app.cell(hide_code=True)
def _(format_number, mo):
    from widgets.choice import Control, PrecomputedChoice

    # Every step of the slider is computed below, so it works on the static page too.
    billions_by_step = {format_number(n / 2): n / 2 for n in range(1, 141)}  # 0.5 to 70 billion, by 0.5
    weights_in_billions = PrecomputedChoice(
        "capacity", [Control("billions", "weights (billions)", list(billions_by_step), "7", kind="slider")]
    )
    capacity_menu = mo.ui.anywidget(weights_in_billions)
    return billions_by_step, capacity_menu, weights_in_billions


@app.cell(hide_code=True)
def _(
    billions_by_step,
    capacity_menu,
    format_number,
    mo,
    sizes,
    weights_in_billions,
):
    def _view(billions):
        _n = int(billions_by_step[billions] * 1e9)
        _rows = "\n".join(
            f"| {name} | {format_number(round(sizes.payload_gigabytes(_n, bpw), 6))} | {format_number(bpw)} |"
            for name, bpw in sizes.FORMAT_BITS_PER_WEIGHT.items()
        )
        return mo.md(f"**{billions} B weights:**\n\n| format | payload, GB | bits/weight (bfloat16 scales) |\n|---|---|---|\n{_rows}")


    mo.vstack(
        [
            capacity_menu,
            mo.Html(weights_in_billions.outcomes(["billions"], _view)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(bits_per_weight_chart, mo, sizes):
    _grid = sizes.affine_grid()
    _rows = "\n".join(
        f"| {bits} | " + " | ".join(f"{_grid[(bits, g)]:g}" for g in (32, 64, 128)) + " |" for bits in (1, 2, 3, 4, 5, 6, 8)
    )
    mo.vstack(
        [
            mo.md(
                "## MLX's affine grid\n\nMLX stores each group's scale and bias in the weights' own "
                "dtype. For a bfloat16 or float16 model, the usual case, that is a 16-bit scale and a "
                "16-bit bias, so a group of G weights at b bits costs b + 32/G bits per weight (a float32 "
                "model pays b + 64/G, as in notebook 9).\n\n"
                "| bits | g32 | g64 | g128 |\n|---|---|---|---|\n" + _rows
            ),
            bits_per_weight_chart(),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Why storage is not speed

    Halving the bytes does not halve the time. What you save is memory traffic; what you pay
    is decode work, and whether that trade wins depends on the kernel, the instructions the
    hardware has, batching and reuse. Prefill (many tokens at once, weights reused across
    them) and decode (one token at a time, weights streamed) stress different things, and the
    same packed weights can go through different kernels in each. An optimized kernel may
    never materialise the dequantized matrix at all. The only honest speed number is a
    measurement of the real workload on the real machine: see `bench/` and notebook 8.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=7))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. Move the slider to 70 B. How many GB is Q4_K, and how many does BF16 need?
       *(Check: 39.375 and 140.)*
    2. Which MLX affine setting is closest to Q4_K's 4.5 bits per weight? *(Check the grid:
       4-bit g64, also 4.5.)*
    3. Why is MXFP4 cheaper than NVFP4 per weight? *(Check: one 8-bit scale per 32 weights
       versus one per 16: 8/32 = 0.25 against 8/16 = 0.5.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("07_capacity_and_cost.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()

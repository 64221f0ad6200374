import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="3 · MXFP4: one power-of-two ruler for 32 values",
)


@app.cell(hide_code=True)
def _():
    import marimo as mo
    import numpy as np

    from lab import device
    from lab.codes import e2m1
    from lab.formats import mxfp4, rounding
    from lab.numbers import format_number
    from lab.study.metrics import error_metrics
    from lab.teach.charts import block_grid_chart, difference_chart
    from widgets import OwnershipView

    return (
        OwnershipView,
        block_grid_chart,
        device,
        difference_chart,
        e2m1,
        error_metrics,
        format_number,
        mo,
        mxfp4,
        np,
        rounding,
    )


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 3 · MXFP4: one power-of-two ruler for 32 values

    An MXFP4 block is 32 E2M1 element codes and **one** E8M0 scale byte. E8M0 is all exponent:
    eight bits, bias 127, no sign, no fraction. Bytes 0 to 254 mean 2^(byte − 127); byte 255 is
    reserved for NaN, and there is no zero.

    Open byte `0x7E`: it is 126, so the exponent is 126 − 127 = −1 and the scale is 0.5. An
    element whose E2M1 value is 3 becomes 3 × 0.5 = 1.5, and every one of the 32 elements
    answers to that same byte. Click any element of the block that follows to trace it; change the scale byte and
    watch all 32 move together. Try `0xFF`.
    """)
    return


@app.cell(hide_code=True)
def _(OwnershipView, mo):
    ownership = mo.ui.anywidget(OwnershipView())
    ownership
    return


@app.cell(hide_code=True)
def _(mo, mxfp4):
    mo.md(
        f"""
        ## What the block costs

        32 codes × 4 bits = 16 bytes, plus 1 scale byte = 17 bytes, so 17 × 8 / 32 =
        **{mxfp4.BITS_PER_WEIGHT} bits per weight**. That counts codes and scale only: no padding,
        no file overhead, no runtime memory. A GPU kernel may also want the scales tiled or
        swizzled; which scale owns which element is the logical contract, the memory layout is a
        second one.
        """
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Two rules for choosing the scale

    The format fixes how to *read* a block, not how to *choose* its scale byte, and two rules
    in real use differ by one step:

    * **OCP floor** (the MX v1.0 spec; ggml; torchao with round-half-even elements): exponent =
      ⌊log₂ amax⌋ − 2, where 2 is the exponent of E2M1's largest value 6. The biggest element
      can land above 6 × scale and saturate.
    * **MLX ceil** (MLX 0.32.4): exponent = ⌈log₂(amax / 6)⌉. Nothing saturates, but small
      elements lose a step of resolution.

    They also round elements differently at exact midpoints: MLX and ggml send ties toward zero
    (and never store −0), the OCP/torchao preset rounds half to even. Next, the same block goes
    through all three presets. Change the seed or the spread and compare, and set the largest
    element to 7 × the spread: the two rules then pick scale bytes one step apart.
    """)
    return


@app.cell(hide_code=True)
def _(format_number, mo):
    from widgets.choice import Control, PrecomputedChoice

    # Every combination of these settings has an outcome below (five seeds, seven spreads, two
    # largest elements: 70 blocks, each with its MLX run), so the controls work on the static page
    # too. A live page computes only the one shown, and each other one when it is picked
    # (widgets/choice.py): all 70 made its first render wait 9.5 s.
    spread_by_step = {format_number(n): n for n in range(-6, 7, 2)}
    # 5 lies in [4, 6): both rules choose exponent 0. 7 lies in (6, 8): floor(log₂ 7) − 2 = 0 but
    # ceil(log₂(7 / 6)) = 1, so the rules choose scale bytes one apart.
    largest_by_option = {"5 (both rules agree)": 5.0, "7 (the rules disagree)": 7.0}
    block_choice = PrecomputedChoice(
        "mxfp4-block",
        [
            Control("seed", "random seed", [str(n) for n in range(3, 8)], "7", kind="number"),
            Control("spread", "log₂ of the block's spread", list(spread_by_step), "0", kind="slider"),
            Control("largest", "largest element (× the spread)", list(largest_by_option), "5 (both rules agree)"),
        ],
    )
    block_menu = mo.ui.anywidget(block_choice)
    return block_menu, largest_by_option, spread_by_step


@app.cell(hide_code=True)
def _(block_menu, largest_by_option, np, spread_by_step):
    def drawn_block(seed, spread, largest):
        """The block for these options, as the controls name them: (seed, spread, largest)."""
        _scale = 2.0 ** spread_by_step[spread]
        _rng = np.random.default_rng(int(seed))
        _block = (_rng.normal(0, 1, 32) * _scale).astype(np.float32)
        _block[:4] = np.array([0.75, 1.75, -3.5, 5.0], dtype=np.float32) * _scale  # planted midpoints
        _block[4] = largest_by_option[largest] * _scale  # planted largest element: sets amax
        return _block


    block = drawn_block(*(_control["value"] for _control in block_menu.controls))  # the one shown first
    return (drawn_block,)


@app.cell(hide_code=True)
def _(
    block_menu,
    drawn_block,
    error_metrics,
    format_number,
    mo,
    mxfp4,
    np,
    rounding,
):
    def _table(*options):
        block = drawn_block(*options)
        _rows = []
        for _name, _preset in rounding.PRESETS.items():
            _tensor = mxfp4.quantize(block, rule=_name)
            _error = error_metrics(block, _tensor.dequantize())
            _rows.append(
                f"| `{_name}` | `0x{int(_tensor.scale_bytes[0]):02X}` | {format_number(float(_tensor.scales[0]))} "
                f"| {' '.join(f'{c:X}' for c in _tensor.codes[:8])} … | {_error['relative_rmse']:.4f} "
                f"| {format_number(round(_error['max_abs_error'], 6))} |"
            )
        return mo.md(
            f"amax = {format_number(float(np.abs(block).max()))}\n\n"
            "| preset | scale byte | scale | first 8 codes (hex) | relative RMS error | max error |\n|---|---|---|---|---|---|\n"
            + "\n".join(_rows)
        )


    mo.vstack(
        [
            block_menu,
            mo.Html(block_menu.outcomes(["seed", "spread", "largest"], _table)),
            mo.md("\n".join(f"* `{p.name}`: {p.source}" for p in rounding.PRESETS.values())),
        ]
    )
    return


@app.cell(hide_code=True)
def _(block_grid_chart, block_menu, drawn_block, e2m1, mo, mxfp4):
    # The grid each rule gives this block: its 15 values at the chosen scale; beyond them, clipping.
    def _grids(*options):
        block = drawn_block(*options)
        _charts = []
        for _rule in ("ocp", "mlx"):
            _scale = float(mxfp4.quantize(block, rule=_rule).scales[0])
            _charts.append(
                mo.as_html(block_grid_chart(block, e2m1.VALUES * _scale, title=f"{_rule} rule: scale {_scale:g}"))
            )
        return mo.vstack(_charts)


    mo.vstack(
        [
            mo.md("### The block on each rule's grid"),
            mo.Html(block_menu.outcomes(["seed", "spread", "largest"], _grids)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(block_menu, device, difference_chart, drawn_block, mo):
    def _on_device(*options):
        _device_report = device.run_block("mxfp4", w=drawn_block(*options).reshape(1, 32))
        _chart = difference_chart(_device_report)
        return mo.vstack(
            [
                mo.md(device.report_markdown(_device_report)),
                *([] if _chart is None else [mo.as_html(_chart)]),
            ]
        )


    mo.vstack(
        [
            mo.md(
                "## On device: the same block through MLX\n\nThe lab's `mlx` preset against MLX's own kernels, on every MLX device present."
            ),
            mo.Html(block_menu.outcomes(["seed", "spread", "largest"], _on_device)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import CodeExplorer

    code_explorer = mo.ui.anywidget(CodeExplorer(format="E8M0", code=126, value_text="0.3"))
    mo.vstack([mo.md("## Every E8M0 code, clickable"), code_explorer])
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=3))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. Set the E8M0 byte to `0x80`. What is the scale, and what does element 0 become?
       *(Check: 2^(128 − 127) = 2, and 3 × 2 = 6.)*
    2. Set it to `0xFF`. What happens to the NVFP4 row, which shares the codes but not the
       scale? *(Check: the MXFP4 row is all NaN, the NVFP4 row is unchanged.)*
    3. Set the largest element to 7. Which scale bytes do `ocp` and `mlx` pick now, and which
       has the smaller error? *(Check: `0x7F` (scale 1) for `ocp`, which clips 7 to 6, and
       `0x80` (scale 2) for `mlx`, whose grid has no 7 either. Both max errors are 1, so the max
       error cannot tell them apart; the relative RMS error can: `mlx`'s is larger, because the
       ceil rule coarsens every small element to spare the largest.)*
    4. Look at the first four codes, which are planted midpoints. Which preset rounds 1.75
       (times the spread) up? *(Check: only `ocp`, which rounds half to even.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("03_mxfp4.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()

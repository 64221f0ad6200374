import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="4 · NVFP4: two local rulers and a tensor scale",
)


@app.cell(hide_code=True)
def _():
    import marimo as mo
    import numpy as np

    from lab import device
    from lab.codes import e2m1, e4m3
    from lab.formats import nvfp4
    from lab.numbers import format_number
    from lab.study.metrics import error_metrics
    from lab.teach import sizes
    from lab.teach.charts import block_grid_chart, difference_chart
    from widgets import OwnershipView

    return (
        OwnershipView,
        block_grid_chart,
        device,
        difference_chart,
        e2m1,
        e4m3,
        error_metrics,
        format_number,
        mo,
        np,
        nvfp4,
        sizes,
    )


@app.cell(hide_code=True)
def _(e4m3, mo):
    _parts = e4m3.explain((5 << 3) | 2)
    mo.md(
        f"""
        # 4 · NVFP4: keep the codebook, change the scales

        NVFP4 keeps the E2M1 element codes and changes who owns the scale: each group of **16**
        elements has its own E4M3 scale, and one FP32 scale is shared by the whole tensor.

        E4M3 has a sign bit, four exponent bits (bias 7) and three fraction bits, so unlike E8M0 it
        can land between powers of two. With exponent field 5 and fraction field 2:

        `{_parts['formula']}`

        and an element with E2M1 value 3 in that group, with tensor scale 1, reconstructs to
        3 × 0.3125 × 1 = 0.9375.
        """
    )
    return


@app.cell(hide_code=True)
def _(OwnershipView, mo):
    ownership = mo.ui.anywidget(OwnershipView())
    ownership
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## The reciprocal-scale trap

    In this course "scale" always means the number you **multiply by** to reconstruct. Not
    every API agrees. MLX's `global_scale` is the tensor's absolute maximum g, and decoding
    multiplies by g / 2688 (2688 = 6 × 448, the largest E2M1 value times the largest E4M3
    value). torchao and Transformer Engine store amax / 2688, a different number for the same
    idea. Pass MLX's value to a tool that expects the other and every weight is off by a
    constant factor; the names alone will not warn you.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets.choice import Control, PrecomputedChoice

    # Every combination has an outcome below (ten seeds, with and without the tensor scale), so the
    # controls work on the static page too. A live page computes only the one shown, and each
    # other one when it is picked (widgets/choice.py).
    with_tensor_scale = {"on (MLX convention)": True, "off": False}
    tensor_choice = PrecomputedChoice(
        "nvfp4-tensor",
        [
            Control("seed", "random seed", [str(n) for n in range(10)], "3", kind="number"),
            Control("tensor-scale", "FP32 tensor scale", list(with_tensor_scale), "on (MLX convention)"),
        ],
    )
    tensor_menu = mo.ui.anywidget(tensor_choice)
    return tensor_menu, with_tensor_scale


@app.cell(hide_code=True)
def _(np, nvfp4, tensor_menu, with_tensor_scale):
    def drawn(seed, tensor_scale):
        """(weights, global scale, tensor) for these options, as the controls name them."""
        _rng = np.random.default_rng(int(seed))
        _weights = (_rng.normal(0, 1, (1, 32)) * np.repeat([0.05, 40.0], 16)).astype(np.float32)
        _global_scale = nvfp4.tensor_amax(_weights) if with_tensor_scale[tensor_scale] else None
        return _weights, _global_scale, nvfp4.quantize(_weights, global_scale=_global_scale)


    weights, global_scale, tensor = drawn(*(_control["value"] for _control in tensor_menu.controls))  # shown first
    return (drawn,)


@app.cell(hide_code=True)
def _(drawn, error_metrics, format_number, mo, tensor_menu):
    def _summary(*options):
        weights, _, tensor = drawn(*options)
        _groups = [
            error_metrics(weights[0, g * 16 : (g + 1) * 16], tensor.dequantize()[0, g * 16 : (g + 1) * 16]) for g in range(2)
        ]
        return mo.md(
            f"""
            Two groups with very different spreads (σ = 0.05 and σ = 40) get their own E4M3 scales:
            bytes `0x{int(tensor.scale_bytes[0, 0]):02X}` and `0x{int(tensor.scale_bytes[0, 1]):02X}`,
            decoded {", ".join(format_number(float(v)) for v in tensor.block_scales[0])}, times a tensor
            factor {format_number(tensor.tensor_factor)}. Relative RMS error per group:
            {", ".join(f"{group['relative_rmse']:.4f}" for group in _groups)}: each group's error is relative
            to its own size, because each has its own ruler.
            """
        )


    mo.vstack([tensor_menu, mo.Html(tensor_menu.outcomes(["seed", "tensor-scale"], _summary))])
    return


@app.cell(hide_code=True)
def _(block_grid_chart, drawn, e2m1, mo, tensor_menu):
    # Each group of 16 on its own grid: E2M1's values times its E4M3 scale times the tensor factor.
    def _grids(*options):
        weights, _, tensor = drawn(*options)
        _charts = [
            mo.as_html(
                block_grid_chart(
                    weights[0, _g * 16 : (_g + 1) * 16],
                    e2m1.VALUES * float(tensor.block_scales[0, _g]) * tensor.tensor_factor,
                    title=f"group {_g}: scale {float(tensor.block_scales[0, _g]) * tensor.tensor_factor:.4g}",
                )
            )
            for _g in range(2)
        ]
        return mo.vstack(_charts)


    mo.vstack(
        [
            mo.md("### Each group on its own grid"),
            mo.Html(tensor_menu.outcomes(["seed", "tensor-scale"], _grids)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(format_number, mo, sizes):
    _n = 4096 * 4096
    mo.md(
        f"""
        ## Bits per weight, with the 32/N term

        Codes and the local scale: (16 × 4 + 8) / 16 = **4.5** bits per weight. One FP32 tensor
        scale adds 32/N for a tensor of N weights: **{format_number(sizes.nvfp4_bits_per_weight(32))}**
        for the 32 weights above, **{format_number(sizes.nvfp4_bits_per_weight(_n))}** for a
        4096 × 4096 matrix. Smaller groups buy local freedom with more metadata; they do not make
        accuracy automatic.
        """
    )
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import CodeExplorer

    code_explorer = mo.ui.anywidget(CodeExplorer(format="E4M3", code=42, value_text="0.3"))
    mo.vstack([mo.md("## Every E4M3 code, clickable"), code_explorer])
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=4))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(device, difference_chart, drawn, mo, tensor_menu):
    def _on_device(*options):
        weights, global_scale, _ = drawn(*options)
        _device_report = device.run_block("nvfp4", w=weights, global_scale=global_scale)
        _chart = difference_chart(_device_report)
        return mo.vstack([mo.md(device.report_markdown(_device_report)), *([] if _chart is None else [mo.as_html(_chart)])])


    mo.vstack(
        [
            mo.md("## On device: the same tensor through MLX"),
            mo.Html(tensor_menu.outcomes(["seed", "tensor-scale"], _on_device)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. The ownership view's first E4M3 byte starts at `0x2A`. Work out its value by hand, then
       set it to `0x31` and predict the new value before you look. *(Check: `0x2A` is exponent
       5, fraction 2: 2^(5 − 7) × 1.25 = 0.3125; `0x31` is exponent 6, fraction 1:
       2^(6 − 7) × 1.125 = 0.5625.)*
    2. Set the tensor scale to 2. Which row changes, and by what factor? *(Check: only NVFP4,
       every weight doubles.)*
    3. Turn the tensor scale off. What do the two block-scale bytes become, and does the error
       change? *(Check the bytes and RMS errors above.)*
    4. Compute the bits per weight for a 64-weight tensor by hand. *(Check: 4.5 + 32/64 = 5.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("04_nvfp4.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()

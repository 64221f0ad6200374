import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="2 · The scale is a ruler")


@app.cell(hide_code=True)
def _():
    import marimo as mo
    import numpy as np

    from lab.numbers import format_number
    from lab.teach import scale
    from lab.teach.charts import error_vs_scale_chart
    from widgets import ScaleLab

    return ScaleLab, error_vs_scale_chart, format_number, mo, np, scale


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 2 · The scale is a ruler

    A 4-bit code c only becomes a weight once it is multiplied by a scale s: ŵ = s × c. The
    scale does two things at once. It sets the **spacing** of the marks and the **reach** of
    the largest one. At s = 0.5 the positive marks are 0, 0.25, 0.5, 0.75, 1, 1.5, 2 and 3; at
    s = 0.125 the same eight codes stop at 0.75.

    The lab that follows uses one simple rule, stated so you can check it by hand: each weight goes to
    the nearest scaled E2M1 value, an exact tie goes to the lower code, and anything past
    ±6·s is clipped. It is a teaching convention, not a vendor's calibration recipe.
    """)
    return


@app.cell(hide_code=True)
def _(ScaleLab, mo):
    lab_row = mo.ui.anywidget(ScaleLab())
    lab_row
    return


@app.cell(hide_code=True)
def _(format_number, mo, scale):
    def _row(label, result):
        weights = ", ".join(format_number(v) for v in result.w_hat)
        signed = ("+" if result.delta_y > 0 else "") + format_number(result.delta_y)
        return f"| {label} | {weights} | {format_number(result.y_hat)} | {signed} | {int(result.clipped.sum())} |"

    _half = scale.analyse(scale.ARTICLE_W, scale.ARTICLE_X, 0.5)
    _eighth = scale.analyse(scale.ARTICLE_W, scale.ARTICLE_X, 0.125)
    mo.md(
        f"""
        ## Watch the output, not only the weights

        With w = [−1, 0.3, 0.9, 1.7] and x = [2, 1, −1, 0.5], the exact output is
        y = −2 + 0.3 − 0.9 + 0.85 = **{format_number(_half.y)}**.

        | scale | ŵ | ŷ | Δy | clipped |
        |---|---|---|---|---|
        {_row("0.5", _half)}
        {_row("0.125", _eighth)}

        The smaller scale clips three of the four weights and still gives the smaller output error,
        because the errors Δy = Σ(ŵᵢ − wᵢ)xᵢ partly cancel for **this** input. That is luck, not a
        rule: the chart that follows uses the same weights with other inputs.
        """
    )
    return


@app.cell(hide_code=True)
def _(error_vs_scale_chart, mo, np, scale):
    _inputs = {
        "article x = [2, 1, −1, 0.5]": list(scale.ARTICLE_X),
        "all ones": [1.0, 1.0, 1.0, 1.0],
        "alternating [1, −1, 1, −1]": [1.0, -1.0, 1.0, -1.0],
        "last weight dominant [0, 0, 0, 4]": [0.0, 0.0, 0.0, 4.0],
    }
    _scales = 2.0 ** np.array(scale.SCALE_POWERS)
    mo.vstack(
        [
            mo.md("## Output error depends on the input"),
            error_vs_scale_chart(scale.ARTICLE_W, _inputs, _scales),
            mo.md(
                "One scale can look best for one input and worst for another. A single good-looking "
                "output never establishes quality; check representative inputs and the real task."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=2))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. Type the weights `0.35, 1.7` and inputs `1, 1`. At scale 0.5, what are ŵ? At 0.125?
       *(Check: 0.25 and 1.5, then 0.375 and a clipped 0.75: one error shrinks, one grows.)*
    2. With the article's row, find a power-of-two scale whose Δy is exactly zero, or show
       there is none among 2⁻⁶…2². *(Check the Δy readout as you click through.)*
    3. Set the inputs to `0, 0, 0, 4`. Which scale is best now, and why does clipping 1.7 hurt
       so much? *(Check: the chart's "last weight dominant" line.)*
    4. Enter a weight exactly halfway between two marks, e.g. `0.125` at scale 0.5. Which way
       does it go? *(Check: down to 0, the lower code, as the lab's rule says.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("02_scale_is_a_ruler.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()

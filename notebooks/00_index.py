import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="The four-bit lab")


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab.teach import course

    return course, mo


@app.cell(hide_code=True)
def _(course, mo):
    mo.md(
        r"""
    # The four-bit lab

    What is a 4-bit weight, really? Four bits say how much room a code takes, not which number
    it means. This course follows one value from its four bits, through its scale, to its share
    of a dot product, for the formats in use today: **MXFP4**, **NVFP4** and GGUF's **Q4_K**,
    and the codes beneath them (E2M1, E8M0, E4M3, MLX affine).

    Every number here can be done by hand, and the lab checks itself against independent
    sources: ml_dtypes for the codes, gguf-py for GGUF blocks, MLX's own kernels for its modes,
    and the worked numbers of the article the course follows.

    ## The course

    """
        + course.index_markdown()
        + "\n\nEach notebook ends with a short *Try this* list whose answers you can check on the page, "
        "and links to the notebooks either side of it.\n\n"
        + course.navigation(course.INDEX)
    )
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.ui.anywidget(_PresenterToggle())
    return


@app.cell(hide_code=True)
def _():
    from lab.teach import warm

    # Once the index is drawn: what the next page needs is imported and checked meanwhile.
    _started = warm.start()
    return


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="The four-bit lab")


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab import course

    return course, mo


@app.cell(hide_code=True)
def _(course, mo):
    _lines = "\n".join(f"{number}. [{title}]({course.link(file)}): {summary}" for number, (file, title, summary) in enumerate(course.NOTEBOOKS, start=1))
    mo.md(
        f"""
        # The four-bit lab

        What is a 4-bit weight, really? Four bits say how much room a code takes, not which number
        it means. This course follows one value from its four bits, through its scale, to its share
        of a dot product, for the formats in use today: **MXFP4**, **NVFP4** and GGUF's **Q4_K**,
        and the codes beneath them (E2M1, E8M0, E4M3, MLX affine).

        Every number here can be done by hand, and the lab checks itself against independent
        sources: ml_dtypes for the codes, gguf-py for GGUF blocks, MLX's own kernels for its modes,
        and the worked numbers of the article the course follows.

        {_lines}

        Each notebook ends with a short *Try this* list whose answers you can check on the page.
        """
    )
    return


if __name__ == "__main__":
    app.run()

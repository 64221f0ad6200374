"""The four-bit lab: what a 4-bit weight really is, in layers that import downward only.

    lab.errors, lab.numbers, lab.text   the typed errors, the number grammar every page reads and
                                        writes, and the one boundary for text from outside
    lab.codes                           element and scale codes: e2m1, e8m0, e4m3, nibble (UINT4, INT4)
    lab.formats                         block formats behind one registry (FORMATS): mxfp4, mxfp8,
                                        nvfp4, affine, q4k, q8_0 and GGUF's other 4-bit codes; rounding
                                        presets; MLX's layout
    lab.interop                         files and libraries: gguf (validated reading, inventories, writing)
    lab.teach                           the course's pieces: scale lab, sizes, metrics, charts, course,
                                        zoo, the GGUF browser, real weights, the model study and the
                                        on-device pane (lab.teach.pane)

Import a module from where it lives (`from lab.formats import mxfp4`); this package re-exports nothing.
"""

__version__ = "0.1.0"

"""The four-bit lab: what a 4-bit weight really is, in layers that import downward only.

Bottom first; a layer imports only the layers below it and the root modules, and never a private
(`_`) module of another package (tests/apps/test_layers.py holds the tree to this):

    lab.errors, lab.numbers, lab.text,  the typed errors, the number grammar every page reads and
    lab.files, lab._arrays              writes, the one boundary for text from outside, paths shown
                                        to a learner, and the array checks everyone shares
    lab.codes                           element and scale codes: e2m1, e8m0, e4m3, nibble (UINT4, INT4)
    lab.formats                         block formats behind one registry (FORMATS), their rounding
                                        presets, scale searches, MLX's layout, the asymmetric fixtures
    lab.interop                         files and libraries: gguf (validated reading, inventories, writing)
    lab.study                           what a format does to a real model: the model, its weights, the
                                        retrieval task, behaviour, metrics and the result cache
    lab.device                          the on-device pane: the lab's bytes through the installed MLX
    lab.teach                           the course's own pieces: course, scale lab, sizes, charts, the
                                        decoder zoo and the GGUF browser

Import a module from where it lives (`from lab.formats import mxfp4`); this package re-exports nothing.
"""

__version__ = "0.1.0"

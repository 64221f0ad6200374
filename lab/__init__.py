"""The four-bit lab's codec: what a 4-bit weight really is, one module per format.

    lab.e2m1, lab.e8m0, lab.e4m3, lab.nibble   element and scale codes
    lab.scale                                  the article's scale lab (lab convention)
    lab.mxfp4, lab.mxfp8, lab.nvfp4            block float formats, MLX and GGUF layouts
    lab.affine                                 MLX's affine mode as it runs
    lab.q4k                                    GGUF Q4_K super-blocks
    lab.rounding                               named rounding presets ("mlx", "ggml", "ocp")
    lab.sizes                                  bits per weight and capacity arithmetic
    lab.errors                                 the typed errors every module raises
    lab.mlx_bridge, lab.device                 MLX's layout, and the on-device pane's reports
    lab.gguf_tools                             validated GGUF reading, inventories, writing
    lab.real_weights                           a real transformer through every format
    lab.zoo                                    deliberately broken decoders and the checks that catch them
    lab.charts, lab.course                     the course's charts and table of contents
"""

from ._blocks import fmt as format_number

__version__ = "0.1.0"
__all__ = ["format_number"]

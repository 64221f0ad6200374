"""The lab's formats in other people's files and libraries: gguf (a bounded, validating reader, the
tensor inventory, recipes, and a writer). MLX's side lives with the formats (lab.formats.mlx_layout)
and, run on a device, in lab.device.

May import: lab.codes, lab.formats and lab's root modules.
"""

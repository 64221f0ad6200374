"""Element and scale codes, one module each: e2m1 (FP4), e8m0 (a power-of-two scale), e4m3 (FP8)
and nibble (UINT4 and INT4 in a byte). Each encodes and decodes whole numpy arrays.

May import: lab's root modules (errors, numbers, _arrays) only.
"""

"""The course's own pieces: navigation and readouts (course), the scale lab (scale), storage sizes
(sizes), the charts by subject (charts), the decoder zoo (zoo) and the GGUF browser (gguf_browser).

May import: every layer below (codes, formats, interop, study, device) and lab's root modules.
"""

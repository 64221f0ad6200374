"""The course's own pieces: navigation and readouts (course), the scale lab (scale), storage sizes
(sizes), the charts by subject (charts), the decoder zoo (zoo), the GGUF browser (gguf_browser),
notebook 12's tables, prompt checks and progress words (chat_page), what a typo keeps on screen
(kept) and the slides' speaker notes (speaker_notes).

May import: every layer below (codes, formats, interop, study, device) and lab's root modules.
"""

"""What the bench and the tests share to drive the lab from outside: headless Chromium
(chromium.py) and a static server for a built folder (static_server.py).

It imports neither the bench's own modules nor the tests, only the lab's product code, so both
depend on it and not on each other: bench/browser.py and bench/site.py time pages with it, and
tests/chromium.py adds pytest's policy (skip on a laptop, fail under CI) on top. It lives in bench/
because the tests already import bench, while tests/ is no package (pytest puts the folder itself
on sys.path) and would bring pytest into the bench.
"""

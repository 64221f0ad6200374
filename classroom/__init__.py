"""The classroom: serving the built site to a room, and the teacher's view of it.

- serve.py: the server (`python3 labctl.py serve [--lan] [--class]`, `python -m classroom.serve`):
  SiteServer's one loop reads each request whole, then hands it to a handler thread.
- handler.py: what one request gets (SiteHandler): the Host check, the site's files gzipped and
  cached, the room page and the teacher's pages.
- room.py: this machine's LAN addresses, the QR code and the /room page for the projector.
- teacher_view.py: the class register of the room's answers, its bounds and token, and the
  teacher's and speaker's pages, which inline widgets/teacher.js and widgets/speaker.js as
  widgets._bundle bundles them.

May import: lab and widgets (the JS bundler, for the teacher's and speaker's pages). lab and widgets
never import classroom; classroom never imports publish, which may import it.
"""

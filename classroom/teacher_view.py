"""The teacher's view of a workshop room: `python3 labctl.py serve --lan --class`.

Each student's exercises post every answer they check, under a nickname the student types, to
POST /class/answers; the teacher opens /class#TOKEN (the link serve prints in the teacher's
terminal, the token in its fragment so it never reaches a log or a Referer) and sees a grid of
exercises by student that follows the room live, and can download it as CSV. From there,
/class/notes#TOKEN opens each notebook as slides (?slides&present) for the projector and shows the
speaker notes (lab.teach.speaker_notes) of the slide on show, for the token alone.

What the server keeps is the last answer of each student to each exercise, with the first answer
the student checked to that question, how many different answers they checked, and whether they
asked to see the working first (a student's page sends them with each answer), in memory only:
nothing is written to disk, and the CSV is made in the teacher's browser. The server never judges an answer:
it keeps the text the student typed with the seed and round of the question, and the teacher's page
checks each one again with the exercises' own generator (widgets/codec/teach/exercises.js), as a
student's page does. A post that claims a verdict, or an answer nobody typed, counts nothing.

Bounds, whatever clients send: a body of at most MAX_BODY_BYTES, read only after its length was
checked; at most MAX_STUDENTS students of at most MAX_ANSWERS_PER_STUDENT exercises each, at most
MAX_STUDENTS_PER_ADDRESS of them started from one address, so one device cannot fill the class;
posts from one address at most POST_BURST at once and POST_RATE_PER_S after that (a token bucket,
kept for at most MAX_CLIENTS addresses). Text is checked as it enters, never as it leaves: a
nickname or an answer that is not Unicode text (a lone surrogate) is refused, and so is a nickname
with a character the teacher's grid could not show as itself (a control, an invisible or bidi
mark, a space other than the plain one). Every refusal is a 4xx with a one-line reason in the
lab's words.

The teacher's page changes the room with the token too: POST /class/remove {"student": id} takes a
student off the grid (their place in the class and on their address is free again; a page of
theirs that posts again comes back as a new row), and POST /class/merge {"from": id, "into": id}
folds a student who came back under a new id into one row, which keeps the newer answer to each
exercise; later posts from the merged-away id land on that row. Both reply with the room's answers.

Which room a page belongs to travels in a session cookie (COOKIE) that every reply of this server
sets: the exercises post only where it is set, so the static site, a plain `serve` and the live
course post nothing, and a page left open from an earlier class is told so (409) instead of mixing
two rooms.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
import secrets
import threading
import time
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, field

from classroom.room import THEME_CSS
from lab.errors import InputError
from lab.teach import course
from lab.teach.speaker_notes import speaker_notes
from lab.text import HIDDEN_CATEGORIES, OTHER_SPACES, read_json, shown, visible
from widgets._bundle import bundle

# The paths of the teacher's view; nothing else under /class/ is served.
TEACHER_PATH = "/class"
RESULTS_PATH = "/class/results"
SPEAKER_PATH = "/class/notes"
NOTES_PATH = "/class/notes.json"
ANSWERS_PATH = "/class/answers"
REMOVE_PATH = "/class/remove"
MERGE_PATH = "/class/merge"
COOKIE = "four-bit-lab-class"
# How often the teacher's page asks for the room's answers, in milliseconds.
POLL_MS = 3000

# One answer's post is about 300 bytes. Its two answers (the last and the first) of at most 200
# characters each could be 1,200 bytes each as JSON escapes (\u0001); this leaves room for them
# and the rest, and no more.
MAX_BODY_BYTES = 4096
# A workshop is twenty; a lecture hall a few hundred. One more student is refused, not a first dropped.
MAX_STUDENTS = 500
# Students started from one address: a workshop of twenty behind one address (a NAT, a test on
# loopback), each starting twice (a second browser, a private window), fits; a script inventing
# students fills less than a tenth of the class before the teacher can remove them.
MAX_STUDENTS_PER_ADDRESS = 40
# More than twice the course's exercise kinds (24), far fewer than a flood of invented ones.
MAX_ANSWERS_PER_STUDENT = 64
# A nickname fits a grid's column on a phone; the exercises' answer field keeps at most 200 characters.
MAX_NICKNAME = 24
MAX_ANSWER = 200
# The tries one question counts (widgets/exercises.js's MOST_TRIES); a page stops counting there.
MAX_TRIES = 9999
# Posts from one address: a whole class behind one address (a test on loopback, a NAT) checking
# answers at once fits the burst; a script posting in a loop is held to a few a second.
POST_BURST = 240
POST_RATE_PER_S = 4.0
# Addresses whose buckets are kept; the one used longest ago is forgotten first.
MAX_CLIENTS = 4096
LARGEST_SEED = 2**32 - 1
LARGEST_ROUND = 2**31 - 1

STUDENT_ID = re.compile(r"[0-9a-f]{32}")
ROOM_ID = re.compile(r"[0-9a-f]{32}")
KIND = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?")
POST_FIELDS = frozenset({"room", "student", "nickname", "kind", "seed", "round", "answer", "first", "tries", "shown"})
# What a page from before the first answer and the tries were kept posts: refused, with the remedy.
OLD_POST_FIELDS = POST_FIELDS - {"first", "tries", "shown"}
# The paths this server takes a POST at (serve.py hands each to Classroom.post): a student's answer,
# and the teacher's two changes.
POST_PATHS = frozenset({ANSWERS_PATH, REMOVE_PATH, MERGE_PATH})
# Unicode categories a name on the grid may not hold: lab.text's hidden ones but unassigned (Cn),
# since Python's tables are older than a browser's and would call a new emoji unassigned; the grid
# spells out any that is unassigned still.
UNSHOWABLE_CATEGORIES = HIDDEN_CATEGORIES - {"Cn"}


class ClassError(ValueError):
    """A request the teacher's view refuses: `status` (4xx) and a one-line reason."""

    def __init__(self, status: int, reason: str, retry_after_s: int | None = None):
        super().__init__(reason)
        self.status, self.retry_after_s = status, retry_after_s


def _whole(value, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _text(value, longest: int) -> bool:
    return isinstance(value, str) and len(value) <= longest


def _unshowable(text: str) -> str | None:
    """The first character of `text` that a name on the grid could not show as itself."""
    for char in text:
        category = unicodedata.category(char)
        if category in UNSHOWABLE_CATEGORIES or (category == OTHER_SPACES and char != " "):
            return char
    return None


def _json_object(body: bytes, fields: frozenset) -> dict:
    """A post's body as a JSON object with exactly `fields`; ClassError(400) otherwise."""
    try:
        # the one reader of outside JSON: nesting, UTF-8, NaN and lone surrogates checked before use
        post = read_json(body, what="the post", max_depth=2, max_chars=MAX_BODY_BYTES)
    except InputError as error:
        raise ClassError(400, str(error)) from None
    if not isinstance(post, dict):
        raise ClassError(400, "the post must be one JSON object")
    if set(post) != fields:
        unknown = sorted(set(post) - fields)
        missing = sorted(fields - set(post))
        what = f"has fields it should not ({', '.join(map(repr, unknown))})" if unknown else f"lacks {missing}"
        raise ClassError(400, f"the post {what}")
    return post


def read_post(body: bytes) -> dict:
    """One answer's post, checked field by field; ClassError(400) says what is wrong with it. The
    nickname comes back trimmed and composed (NFC), so a name typed two ways is one name. A post
    of a page from before the tries were kept (its fields OLD_POST_FIELDS) is refused with the
    remedy: the teacher's grid would show its last answer as a first try."""
    try:
        post = _json_object(body, POST_FIELDS)
    except ClassError as refused:
        if _json_object_fields(body) == OLD_POST_FIELDS:
            raise ClassError(
                400,
                "this page is from an earlier version of the lab and does not say how many tries an answer took: "
                "reload it, and check the answer again",
            ) from None
        raise refused
    if isinstance(post["nickname"], str):
        post["nickname"] = unicodedata.normalize("NFC", post["nickname"]).strip()
        if unshowable := _unshowable(post["nickname"]):
            raise ClassError(
                400,
                f"the post's nickname holds {visible(unshowable)}, which a name on the teacher's grid may not: "
                "a name is letters, digits, signs and plain spaces",
            )
    checks = [
        ("room", isinstance(post["room"], str) and ROOM_ID.fullmatch(post["room"]), "32 hex digits"),
        ("student", isinstance(post["student"], str) and STUDENT_ID.fullmatch(post["student"]), "32 hex digits"),
        (
            "nickname",
            _text(post["nickname"], MAX_NICKNAME) and post["nickname"].strip(),
            f"1..{MAX_NICKNAME} characters",
        ),
        ("kind", isinstance(post["kind"], str) and KIND.fullmatch(post["kind"]), "an exercise's name"),
        ("seed", _whole(post["seed"], 1, LARGEST_SEED), f"a whole number 1..{LARGEST_SEED}"),
        ("round", _whole(post["round"], 0, LARGEST_ROUND), f"a whole number 0..{LARGEST_ROUND}"),
        ("answer", _text(post["answer"], MAX_ANSWER), f"text of at most {MAX_ANSWER} characters"),
        ("first", _text(post["first"], MAX_ANSWER), f"text of at most {MAX_ANSWER} characters"),
        ("tries", _whole(post["tries"], 1, MAX_TRIES), f"a whole number 1..{MAX_TRIES}"),
        ("shown", type(post["shown"]) is bool, "true or false"),
    ]
    for name, good, wanted in checks:
        if not good:
            raise ClassError(400, f"the post's {name} must be {wanted}")
    return post


def _json_object_fields(body: bytes) -> frozenset | None:
    """The fields of a post that is a JSON object within the bounds, or None for any other post."""
    try:
        post = read_json(body, what="the post", max_depth=2, max_chars=MAX_BODY_BYTES)
    except InputError:
        return None
    return frozenset(post) if isinstance(post, dict) else None


def read_change(body: bytes, fields: tuple[str, ...]) -> dict:
    """A teacher's change (remove, merge): a JSON object of exactly `fields`, each a student's id;
    ClassError(400) says what is wrong with it."""
    change = _json_object(body, frozenset(fields))
    for name in fields:
        if not (isinstance(change[name], str) and STUDENT_ID.fullmatch(change[name])):
            raise ClassError(400, f"the post's {name} must be a student's id, 32 hex digits")
    return change


@dataclass
class Student:
    nickname: str
    # the address that first posted as this student, which MAX_STUDENTS_PER_ADDRESS counts
    address: str
    # kind -> {seed, round, answer, first, tries, shown, at}, the exercise answered last at the end
    answers: OrderedDict = field(default_factory=OrderedDict)


def _last_at(student: Student) -> float:
    return max((entry["at"] for entry in student.answers.values()), default=0.0)


class Register:
    """The room's answers: each student's last answer to each exercise, bounded in count, and the
    teacher's changes to it (remove, merge)."""

    def __init__(
        self,
        max_students: int = MAX_STUDENTS,
        max_answers: int = MAX_ANSWERS_PER_STUDENT,
        max_per_address: int = MAX_STUDENTS_PER_ADDRESS,
    ):
        self.max_students, self.max_answers, self.max_per_address = max_students, max_answers, max_per_address
        self.students: dict[str, Student] = {}
        # a merged-away student's id -> the student whose row took its answers, so that the page
        # still posting under the old id adds to that row; one entry per merge the teacher made
        self.merged_into: dict[str, str] = {}
        self.lock = threading.Lock()

    def record(self, post: dict, client: str, at: float | None = None) -> None:
        """Keep `post` (read_post's) from `client` (its address)."""
        with self.lock:
            key = self.merged_into.get(post["student"], post["student"])
            student = self.students.get(key)
            if student is None:
                if len(self.students) >= self.max_students:
                    raise ClassError(403, f"the class is full: it takes at most {self.max_students} students")
                started = sum(1 for kept in self.students.values() if kept.address == client)
                if started >= self.max_per_address:
                    raise ClassError(
                        403,
                        f"this device has started {started} students already, the most one address may: "
                        "ask your teacher to remove the ones no longer in use",
                    )
                student = self.students[key] = Student(post["nickname"], client)
            if post["kind"] not in student.answers and len(student.answers) >= self.max_answers:
                raise ClassError(403, f"a student answers at most {self.max_answers} exercises here")
            student.nickname = post["nickname"]  # a student may change it; the grid shows the last
            student.answers.pop(post["kind"], None)
            student.answers[post["kind"]] = {
                "seed": post["seed"],
                "round": post["round"],
                "answer": post["answer"],
                "first": post["first"],
                "tries": post["tries"],
                "shown": post["shown"],
                "at": round(time.time() if at is None else at, 3),
            }

    def _known(self, key: str) -> Student:
        student = self.students.get(key)
        if student is None:
            raise ClassError(404, "no student in this class has that id: removed or merged already?")
        return student

    def remove(self, key: str) -> None:
        """Take student `key` off the grid; their place in the class, and on their address, is free again."""
        with self.lock:
            self._known(key)
            del self.students[key]
            self.merged_into = {old: into for old, into in self.merged_into.items() if into != key}

    def merge(self, source: str, target: str) -> None:
        """Fold student `source` into student `target`: the row kept has the newer answer to each
        exercise, and the name posted last; `source`'s row goes, and its later posts land on `target`."""
        if source == target:
            raise ClassError(400, "a student cannot be merged into themself: choose two rows")
        with self.lock:
            taken, kept = self._known(source), self._known(target)
            # oldest first, `target`'s after `source`'s at the same time, so the later one of a
            # kind is the one kept and the exercise answered last stays at the end
            entries = sorted([*taken.answers.items(), *kept.answers.items()], key=lambda item: item[1]["at"])
            answers = OrderedDict()
            for kind, entry in entries:
                answers.pop(kind, None)
                answers[kind] = entry
            while len(answers) > self.max_answers:
                answers.popitem(last=False)
            if _last_at(taken) > _last_at(kept):
                kept.nickname = taken.nickname
            kept.answers = answers
            del self.students[source]
            self.merged_into = {old: target if into == source else into for old, into in self.merged_into.items()}
            self.merged_into[source] = target

    def snapshot(self) -> dict:
        """What the teacher's page reads: every student, in the order they first posted."""
        with self.lock:
            return {
                "students": [
                    {"student": key, "nickname": student.nickname, "answers": dict(student.answers)}
                    for key, student in self.students.items()
                ]
            }


class RateLimiter:
    """A token bucket per client address: `burst` posts at once, then `rate` a second."""

    def __init__(self, burst: float = POST_BURST, rate: float = POST_RATE_PER_S, max_clients: int = MAX_CLIENTS):
        self.burst, self.rate, self.max_clients = burst, rate, max_clients
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # address -> (tokens, when)
        self.lock = threading.Lock()

    def wait_s(self, client: str, now: float | None = None) -> float:
        """0 when `client` may post now (and takes one post from its bucket), else the seconds
        until it may."""
        now = time.monotonic() if now is None else now
        with self.lock:
            tokens, then = self.buckets.pop(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - then) * self.rate)
            allowed = tokens >= 1
            self.buckets[client] = (tokens - 1 if allowed else tokens, now)
            while len(self.buckets) > self.max_clients:
                self.buckets.popitem(last=False)
            return 0.0 if allowed else (1 - tokens) / self.rate


CLASS_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{title}</title>
<style>
{theme}
body {{ font-family: system-ui, sans-serif; font-size: clamp(16px, 1.1vw, 24px); line-height: 1.5; margin: 0; padding: 1rem max(1rem, 2vw); }}
h1 {{ font-size: 1.6em; line-height: 1.2; margin: 0.3rem 0 0.6rem; }}
button, select {{ font: inherit; padding: 0.3rem 0.8rem; min-height: 44px; color: inherit; background: transparent; border: 2px solid currentColor; border-radius: 6px; }}
select {{ max-width: 100%; }}
select option {{ color: #1a1a1a; background: #ffffff; }}
:focus-visible {{ outline: 3px solid #005a8c; outline-offset: 2px; }}
.bar {{ display: flex; flex-wrap: wrap; gap: 0.6rem 1.2rem; align-items: center; margin: 0.6rem 0; }}
.scroll {{ overflow-x: auto; max-width: 100%; }}
table {{ border-collapse: collapse; font-variant-numeric: tabular-nums; }}
th, td {{ border: 1px solid #8a8a8a; padding: 0.25rem 0.5rem; text-align: center; white-space: nowrap; }}
th[scope=row] {{ text-align: left; position: sticky; left: 0; background: #ffffff; max-width: 12em; white-space: normal; overflow-wrap: break-word; }}
td.right {{ background: #d6ecff; color: #00345a; }}
td.wrong {{ background: #ffe3c4; color: #5a2a00; }}
.error {{ color: #a30000; font-weight: 600; }}
.key {{ list-style: none; padding: 0; columns: 18em; }}
.slide {{ font-size: 1.3em; font-weight: 600; margin: 0.4rem 0; }}
.note {{ font-size: 1.25em; line-height: 1.5; max-width: 48rem; border-left: 4px solid #e69f00; padding-left: 0.8rem; }}
.muted {{ color: #4a4a4a; }}
.confirm {{ border: 2px solid #a30000; border-radius: 6px; padding: 0 0.8rem; margin: 0.6rem 0; max-width: 40rem; }}
button.danger {{ color: #a30000; }}
@media (prefers-color-scheme: dark) {{
  th[scope=row] {{ background: #181a1b; }}
  td.right {{ background: #0c3a5e; color: #e6f3ff; }}
  td.wrong {{ background: #5a3000; color: #fff0e0; }}
  .error, button.danger {{ color: #ff9d9d; }}
  .confirm {{ border-color: #ff9d9d; }}
  .muted {{ color: #c8c8c8; }}
  :focus-visible {{ outline-color: #7cc4f4; }}
}}
</style>
</head>
<body>
<h1>{title}</h1>
<main id="class-page" data-source="{source}" data-poll-ms="{poll_ms}"><p>Loading…</p></main>
<script type="module">{script}</script>
</body>
</html>
"""


def _script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


# The teacher's two pages: path -> (title, script, what its script fetches with the token)
PAGES = {
    TEACHER_PATH: ("The room's answers", "teacher.js", RESULTS_PATH),
    SPEAKER_PATH: ("Speaker notes", "speaker.js", NOTES_PATH),
}


def notes_of_the_course() -> dict:
    """The speaker notes (lab.teach.speaker_notes) of each course notebook, in the course's order,
    with the page that shows it as slides."""
    notes = speaker_notes()
    return {
        "notebooks": [
            {
                "page": f"{file.removesuffix('.py')}.html",
                "number": number,
                "title": title,
                "notes": list(notes.get(file.removesuffix(".py"), {}).items()),
            }
            for number, (file, title, _) in enumerate(course.NOTEBOOKS, start=1)
        ]
    }


def _json_reply(data: dict) -> bytes:
    # ASCII escapes for everything else: whatever text got in, the reply is bytes a browser reads
    return json.dumps(data).encode("ascii")


class Classroom:
    """One class: its room id (the cookie), the teacher's token, the register and the rate limit."""

    def __init__(
        self,
        token: str | None = None,
        room: str | None = None,
        register: Register | None = None,
        limiter: RateLimiter | None = None,
    ):
        self.token = token if token is not None else secrets.token_urlsafe(24)
        self.room = room if room is not None else secrets.token_hex(16)
        self.register = register if register is not None else Register()
        self.limiter = limiter if limiter is not None else RateLimiter()
        self._pages: dict[str, tuple[bytes, str]] = {}

    def cookie(self, port: int) -> str:
        """The Set-Cookie value that tells this server's pages their room. A cookie is shared by
        every port of a host, so its name carries the port: the live course on another port of the
        same machine does not take itself for a page of this class. Read by the exercises' script,
        so not HttpOnly; a session cookie, gone with the browser."""
        return f"{COOKIE}-{port}={self.room}; Path=/; SameSite=Strict"

    def teacher_link(self, port: int) -> str:
        return f"http://127.0.0.1:{port}{TEACHER_PATH}#{self.token}"

    def page_at(self, path: str) -> tuple[bytes, str] | None:
        """The teacher's page at `path` (PAGES), or None: the page holds nothing of the class (its
        script fetches that with the token), with the Content-Security-Policy that lets exactly
        its own script run."""
        if path not in PAGES:
            return None
        if path not in self._pages:
            title, script_file, source = PAGES[path]
            script = bundle(script_file).replace("</", "<\\/")
            page = CLASS_PAGE.format(
                theme=THEME_CSS, title=shown(title), source=shown(source), poll_ms=POLL_MS, script=script
            )
            policy = (
                f"default-src 'none'; script-src '{_script_hash(script)}'; style-src 'unsafe-inline'; "
                "connect-src 'self'; base-uri 'none'; form-action 'none'"
            )
            self._pages[path] = (page.encode("utf-8"), policy)
        return self._pages[path]

    def data_at(self, path: str, authorization: str | None) -> bytes | None:
        """What a teacher's page fetches from `path` with the token, or None for another path;
        ClassError 401 or 403 without the right token."""
        if path not in (RESULTS_PATH, NOTES_PATH):
            return None
        self.authorised(authorization)
        return self.results() if path == RESULTS_PATH else _json_reply(notes_of_the_course())

    def results(self) -> bytes:
        """The room's answers as the teacher's page reads them."""
        return _json_reply({"room": self.room, **self.register.snapshot()})

    def authorised(self, authorization: str | None) -> None:
        """Raises ClassError 401 without a token and 403 with a wrong one."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ClassError(401, "the teacher's pages need the teacher's token: open the link serve printed")
        if not hmac.compare_digest(token.strip().encode("utf-8", "replace"), self.token.encode("utf-8")):
            raise ClassError(403, "that is not this class's token: open the link serve printed in this run")

    def post(self, path: str, client: str, authorization: str | None, body: bytes) -> bytes | None:
        """A POST to one of POST_PATHS from `client` (its address) with the request's Authorization
        header and body: the JSON to reply with (200), None for a 204, or the ClassError that refuses it."""
        if path == ANSWERS_PATH:
            self.answer(client, body)
            return None
        if path in (REMOVE_PATH, MERGE_PATH):
            self.authorised(authorization)
            if path == REMOVE_PATH:
                self.register.remove(read_change(body, ("student",))["student"])
            else:
                change = read_change(body, ("from", "into"))
                self.register.merge(change["from"], change["into"])
            return self.results()
        raise ClassError(404, "there is nothing to post to at this address")

    def answer(self, client: str, body: bytes) -> None:
        """Keep one posted answer from `client` (its address), or raise the ClassError that refuses it."""
        wait = self.limiter.wait_s(client)
        if wait > 0:
            raise ClassError(429, f"too many posts from this device: wait {math.ceil(wait)} s", math.ceil(wait))
        post = read_post(body)
        if not hmac.compare_digest(post["room"], self.room):
            raise ClassError(409, "this page belongs to an earlier class: reload it to join this one")
        self.register.record(post, client)

"""The teacher's view (serve --class, classroom/teacher_view.py) over loopback: the token, the
students' posts and every way a post can be wrong (text that is not Unicode among them), flooding,
one address inventing students, two hundred clients at once, a nickname that is HTML coming back as
the same text, and the teacher's changes (remove, merge). Every request goes to 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
import time
from pathlib import Path

import pytest
from serving import fetch, make_site, start_server, stop_server

from classroom import serve, teacher_view
from classroom.teacher_view import ClassError, Classroom, RateLimiter, Register, read_post

TOKEN = "teacher-token-for-the-tests-0123456789"
ROOM = "0123456789abcdef0123456789abcdef"


def post_body(**changes):
    fields = {
        "room": ROOM,
        "student": "a" * 32,
        "nickname": "Ada",
        "kind": "nibble-decode",
        "seed": 7,
        "round": 0,
        "answer": "1.5",
        "first": "2",
        "tries": 2,
        "shown": False,
    }
    return json.dumps({**fields, **changes}).encode("utf-8")


@pytest.fixture
def room_server(tmp_path):
    """A class server on loopback: its Classroom, and the port."""
    made = Classroom(token=TOKEN, room=ROOM)
    server, thread = start_server(make_site(tmp_path), classroom=made)
    yield made, server.server_address[1]
    stop_server(server, thread)


def send(port, body, headers=None, method="POST", path=teacher_view.ANSWERS_PATH):
    origin = f"http://127.0.0.1:{port}"
    base = {"Origin": origin, "Content-Type": "application/json", "Content-Length": str(len(body))}
    chosen = {**base, **(headers or {})}
    chosen = {name: value for name, value in chosen.items() if value is not None}
    return fetch(port, path, headers=list(chosen.items()), method=method, body=body)


def results(port, authorization):
    headers = [] if authorization is None else [("Authorization", authorization)]
    status, _, body = fetch(port, teacher_view.RESULTS_PATH, headers=headers)
    return status, json.loads(body)


def change(port, path, fields, authorization=f"Bearer {TOKEN}"):
    """A teacher's change posted as the teacher's page posts it: (status, the reply's JSON)."""
    body = fields if isinstance(fields, bytes) else json.dumps(fields).encode("utf-8")
    status, _, reply = send(port, body, {"Authorization": authorization}, path=path)
    return status, json.loads(reply)


def ids(snapshot):
    return [student["student"] for student in snapshot["students"]]


def test_the_results_need_the_teachers_token(room_server):
    _, port = room_server
    status, body = results(port, None)
    assert status == 401 and "token" in body["error"]
    status, body = results(port, "Bearer not-the-token")
    assert status == 403 and "not this class's token" in body["error"]
    status, _ = results(port, f"Basic {TOKEN}")
    assert status == 401
    status, body = results(port, f"Bearer {TOKEN}")
    assert status == 200 and body == {"room": ROOM, "students": []}


def test_a_posted_answer_is_kept_as_typed_and_a_nickname_of_html_comes_back_as_text(room_server):
    _, port = room_server
    nickname = "<b onclick=x>Ada</b>"  # 20 characters, within the 24 a nickname takes
    status, _, _ = send(port, post_body(nickname=nickname, answer="<b>3</b>"))
    assert status == 204
    status, _, _ = send(port, post_body(kind="mxfp4-decode", seed=12, round=3, answer="0x7f"))
    assert status == 204
    status, body = results(port, f"Bearer {TOKEN}")
    assert status == 200
    [student] = body["students"]
    assert student["student"] == "a" * 32
    assert student["nickname"] == "Ada"  # the last one posted is the one shown
    answers = student["answers"]
    assert list(answers) == ["nibble-decode", "mxfp4-decode"]
    assert answers["nibble-decode"]["answer"] == "<b>3</b>"
    assert {key: answers["mxfp4-decode"][key] for key in ("seed", "round", "answer")} == {
        "seed": 12,
        "round": 3,
        "answer": "0x7f",
    }
    assert abs(answers["mxfp4-decode"]["at"] - time.time()) < 60
    send(port, post_body(nickname=nickname))
    status, body = results(port, f"Bearer {TOKEN}")
    assert body["students"][0]["nickname"] == nickname


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"seed": 0}, "seed"),
        ({"seed": 2**32}, "seed"),
        ({"seed": True}, "seed"),
        ({"seed": 7.0}, "seed"),
        ({"round": -1}, "round"),
        ({"kind": "../etc"}, "kind"),
        ({"kind": ""}, "kind"),
        ({"student": "A" * 32}, "student"),
        ({"student": "a" * 31}, "student"),
        ({"nickname": ""}, "nickname"),
        ({"nickname": "   "}, "nickname"),
        ({"nickname": "x" * 25}, "nickname"),
        ({"nickname": 12}, "nickname"),
        ({"nickname": "Ana\u202eevil"}, "nickname holds \\u202e"),
        ({"nickname": "A\u200bna"}, "nickname holds \\u200b"),
        ({"nickname": "Ana\x00"}, "nickname holds \\x00"),
        ({"nickname": "Ana\u00a0Bo"}, "nickname holds \\xa0"),
        ({"nickname": "Ana\u2028Bo"}, "nickname holds \\u2028"),
        ({"answer": "9" * 201}, "answer"),
        ({"answer": None}, "answer"),
        ({"first": "9" * 201}, "first"),
        ({"first": 2}, "first"),
        ({"tries": 0}, "tries"),
        ({"tries": 10000}, "tries"),
        ({"tries": 1.0}, "tries"),
        ({"tries": True}, "tries"),
        ({"tries": "2"}, "tries"),
        ({"shown": 0}, "shown"),
        ({"shown": "false"}, "shown"),
        ({"shown": None}, "shown"),
        ({"verdict": "correct"}, "'verdict'"),
    ],
)
def test_a_post_with_a_wrong_field_is_a_400_that_names_it(room_server, changes, says):
    made, port = room_server
    status, _, body = send(port, post_body(**changes))
    assert status == 400
    assert says in json.loads(body)["error"]
    assert made.register.snapshot() == {"students": []}


@pytest.mark.parametrize(
    "body",
    [b"", b"{", b"[]", b'"text"', b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000, json.dumps({"room": ROOM}).encode()],
)
def test_malformed_posts_are_400s(room_server, body):
    made, port = room_server
    status, _, reply = send(port, body) if len(body) <= teacher_view.MAX_BODY_BYTES else send(port, body[:2000])
    assert status == 400, reply
    assert json.loads(reply)["error"].startswith("the post")
    assert made.register.snapshot() == {"students": []}


def test_an_oversized_post_is_refused_before_it_is_read(room_server):
    made, port = room_server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        head = (
            f"POST {teacher_view.ANSWERS_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {10**9}\r\n\r\n"
        )
        client.sendall(head.encode())  # and never a byte of the body
        reply = client.recv(65536).decode()
    assert reply.startswith("HTTP/1.0 413") or reply.startswith("HTTP/1.1 413")
    assert "Connection: close" in reply
    assert made.register.snapshot() == {"students": []}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Content-Length": None}, 411),
        ({"Content-Length": "-1"}, 411),
        ({"Content-Length": "1e3"}, 411),
        ({"Transfer-Encoding": "chunked"}, 411),
        ({"Origin": None}, 403),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "null"}, 403),
        ({"Content-Type": "text/plain"}, 415),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
    ],
)
def test_a_post_that_is_not_a_pages_json_is_refused(room_server, headers, status):
    made, port = room_server
    got, _, body = send(port, post_body(), headers)
    assert got == status
    assert json.loads(body)["error"]
    assert made.register.snapshot() == {"students": []}


def test_a_page_of_an_earlier_class_is_told_to_reload(room_server):
    made, port = room_server
    status, _, body = send(port, post_body(room="f" * 32))
    assert status == 409 and "reload" in json.loads(body)["error"]
    assert made.register.snapshot() == {"students": []}


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"])
def test_other_methods_are_405_not_501(room_server, method):
    _, port = room_server
    status, headers, _ = fetch(port, "/class/answers", method=method)
    assert status == 405
    assert headers["Allow"] == "GET, HEAD, POST"


def test_a_post_anywhere_else_is_405_and_a_plain_serve_takes_no_posts(room_server, tmp_path):
    _, port = room_server
    status, _, _ = send(port, post_body(), path="/index.html")
    assert status == 405
    (tmp_path / "plain").mkdir()
    plain, thread = start_server(make_site(tmp_path / "plain"))
    try:
        plain_port = plain.server_address[1]
        status, headers, _ = send(plain_port, post_body())
        assert status == 405 and headers["Allow"] == "GET, HEAD"
        assert headers["Set-Cookie"] is None  # no class, no cookie
        status, _, _ = fetch(plain_port, teacher_view.RESULTS_PATH, headers=[("Authorization", f"Bearer {TOKEN}")])
        assert status == 404
    finally:
        stop_server(plain, thread)


def test_every_reply_of_a_class_server_names_its_room_in_a_cookie_of_its_port(room_server):
    _, port = room_server
    for path in ("/", "/index.html", "/missing", teacher_view.TEACHER_PATH):
        _, headers, _ = fetch(port, path)
        assert headers["Set-Cookie"] == f"four-bit-lab-class-{port}={ROOM}; Path=/; SameSite=Strict"


def test_the_teacher_page_runs_only_its_own_script_and_holds_no_token(room_server):
    _, port = room_server
    status, headers, body = fetch(port, teacher_view.TEACHER_PATH)
    page = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert TOKEN not in page
    [script] = re.findall(r'<script type="module">(.*?)</script>', page, flags=re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = headers["Content-Security-Policy"]
    assert f"script-src 'sha256-{digest}'" in policy
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "http" not in re.sub(r"https?://www\.w3\.org/[\w/.]*", "", page)  # nothing from outside
    assert headers["Cache-Control"] == "no-store"


def test_a_flood_from_one_address_is_held_to_the_burst_then_the_rate(tmp_path):
    # the default burst, and a rate slow enough that a loaded machine posting for 20 s could not
    # earn back the ten posts the assertion below counts on (the bucket's arithmetic is the rate
    # limiter's own test, below)
    limiter = RateLimiter(burst=teacher_view.POST_BURST, rate=0.5)
    made = Classroom(token=TOKEN, room=ROOM, limiter=limiter)
    server, thread = start_server(make_site(tmp_path), classroom=made)
    port = server.server_address[1]
    try:
        statuses = [send(port, post_body(round=n % 5))[0] for n in range(teacher_view.POST_BURST + 20)]
        assert statuses[: teacher_view.POST_BURST - 5].count(204) == teacher_view.POST_BURST - 5
        assert statuses[-10:] == [429] * 10
        status, headers, body = send(port, post_body())
        assert status == 429 and 1 <= int(headers["Retry-After"]) <= 2
        assert "wait" in json.loads(body)["error"]
    finally:
        stop_server(server, thread)
    snapshot = made.register.snapshot()
    assert len(snapshot["students"]) == 1 and len(snapshot["students"][0]["answers"]) == 1


def test_two_hundred_students_post_at_once(tmp_path):
    # every test client is on loopback, one address: here it may start the whole class
    made = Classroom(token=TOKEN, room=ROOM, register=Register(max_per_address=200))
    server, server_thread = start_server(make_site(tmp_path), classroom=made)
    port = server.server_address[1]
    outcomes = []

    def student(n):
        body = post_body(student=f"{n:032x}", nickname=f"student {n}", seed=n + 1, answer=str(n))
        outcomes.append(send(port, body)[0])

    try:
        threads = [threading.Thread(target=student, args=(n,)) for n in range(200)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert outcomes.count(204) == 200
        status, body = results(port, f"Bearer {TOKEN}")
    finally:
        stop_server(server, server_thread)
    assert status == 200
    kept = {student["nickname"]: student["answers"]["nibble-decode"] for student in body["students"]}
    assert len(kept) == 200
    assert all(kept[f"student {n}"]["seed"] == n + 1 and kept[f"student {n}"]["answer"] == str(n) for n in range(200))


def test_a_full_class_and_a_student_with_too_many_exercises_are_refused_with_403():
    register = Register(max_students=2, max_answers=3)
    for n in range(2):
        register.record(read_post(post_body(student=f"{n:032x}")), f"192.0.2.{n}")
    with pytest.raises(ClassError) as full:
        register.record(read_post(post_body(student="f" * 32)), "192.0.2.9")
    assert full.value.status == 403 and "at most 2 students" in str(full.value)
    first = f"{0:032x}"
    for kind in ("k-one", "k-two"):
        register.record(read_post(post_body(student=first, kind=kind)), "192.0.2.0")
    register.record(read_post(post_body(student=first, kind="k-two", answer="2")), "192.0.2.0")  # a kept exercise again
    with pytest.raises(ClassError) as many:
        register.record(read_post(post_body(student=first, kind="k-three")), "192.0.2.0")
    assert many.value.status == 403
    assert list(register.snapshot()["students"][0]["answers"]) == ["nibble-decode", "k-one", "k-two"]


def test_the_rate_limiter_refills_at_its_rate_and_forgets_the_oldest_address():
    limiter = RateLimiter(burst=2, rate=0.5, max_clients=2)
    assert [limiter.wait_s("a", now=0.0) for _ in range(3)] == [0.0, 0.0, 2.0]
    assert limiter.wait_s("a", now=1.0) == pytest.approx(1.0)
    assert limiter.wait_s("a", now=2.0) == 0.0
    limiter.wait_s("b", now=2.0)
    limiter.wait_s("c", now=2.0)
    assert list(limiter.buckets) == ["b", "c"]


def test_a_body_trickled_past_the_deadline_closes_the_connection(tmp_path):
    made = Classroom(token=TOKEN, room=ROOM)
    server, thread = start_server(make_site(tmp_path), classroom=made, timeout_s=1)
    port = server.server_address[1]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            head = (
                f"POST {teacher_view.ANSWERS_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Origin: http://127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            )
            client.sendall(head.encode() + b"{")
            started = time.monotonic()
            assert client.recv(1024) == b""  # closed, with no reply
            assert time.monotonic() - started < 5
    finally:
        stop_server(server, thread)
    assert made.register.snapshot() == {"students": []}


def test_serve_class_prints_the_teachers_link_once_and_main_takes_the_flag(monkeypatch, capsys):
    made = Classroom(token=TOKEN, room=ROOM)
    banner = serve.class_banner(made, 8765)
    assert f"http://127.0.0.1:8765/class#{TOKEN}" in banner
    assert "memory only" in banner
    seen = {}
    monkeypatch.setattr(serve, "serve", lambda site, port, **kwargs: seen.update(port=port, **kwargs))
    assert serve.main(["--lan", "--class", "--port", "9000"]) == 0
    assert seen["port"] == 9000 and seen["lan"] is True and isinstance(seen["classroom"], Classroom)
    assert serve.main(["--port", "9001"]) == 0
    assert seen["classroom"] is None
    assert serve.main(["--class", "--bogus"]) == 2
    assert "--class" in capsys.readouterr().err


def test_each_class_has_its_own_room_and_a_long_random_token():
    first, second = Classroom(), Classroom()
    assert first.room != second.room and re.fullmatch(r"[0-9a-f]{32}", first.room)
    assert first.token != second.token and len(first.token) >= 32


def test_the_pages_limits_are_the_servers():
    """A name or answer the page takes is one the server takes, and the teacher's page posts where
    the server takes its changes: the JS holds the same limits and paths."""
    widgets = Path(__file__).resolve().parents[2] / "widgets"
    page = (widgets / "codec" / "teach" / "classroom.js").read_text(encoding="utf-8")
    exercises = (widgets / "exercises.js").read_text(encoding="utf-8")
    assert re.search(r"export const LONGEST_NICKNAME = (\d+);", page)[1] == str(teacher_view.MAX_NICKNAME)
    assert re.search(r"const LONGEST_ANSWER = (\d+);", exercises)[1] == str(teacher_view.MAX_ANSWER)
    assert re.search(r"export const MOST_TRIES = (\d+);", exercises)[1] == str(teacher_view.MAX_TRIES)
    teacher = (widgets / "teacher.js").read_text(encoding="utf-8")
    assert re.search(r'const REMOVE_PATH = "([^"]+)";', teacher)[1] == teacher_view.REMOVE_PATH
    assert re.search(r'const MERGE_PATH = "([^"]+)";', teacher)[1] == teacher_view.MERGE_PATH


@pytest.mark.parametrize("field", ["nickname", "answer"])
def test_a_lone_surrogate_is_refused_as_it_enters_and_the_results_keep_answering(room_server, field):
    made, port = room_server
    send(port, post_body(student="b" * 32, nickname="Grace"))
    body = post_body(**{field: "\ud800evil"})  # json.dumps writes it as the escape "\ud800"
    assert b'"\\ud800evil"' in body
    status, _, reply = send(port, body)
    assert status == 400
    assert json.loads(reply)["error"].startswith(
        "the post holds a lone surrogate (half of a UTF-16 pair, such as \\ud800)"
    )
    for _ in range(2):  # the teacher's page asks again and again
        status, read = results(port, f"Bearer {TOKEN}")
        assert status == 200 and [student["nickname"] for student in read["students"]] == ["Grace"]
    assert ids(made.register.snapshot()) == ["b" * 32]


def test_text_that_got_in_some_other_way_still_leaves_as_json_text(room_server):
    made, port = room_server
    made.register.record({**read_post(post_body()), "nickname": "\udfff", "answer": "\ud83d"}, "192.0.2.1")
    status, read = results(port, f"Bearer {TOKEN}")
    assert status == 200
    [student] = read["students"]
    assert student["nickname"] == "\udfff" and student["answers"]["nibble-decode"]["answer"] == "\ud83d"


def test_a_nickname_is_kept_composed_so_two_spellings_of_one_name_are_one_name(room_server):
    made, port = room_server
    decomposed = "Jose\u0301 \U0001f600"  # an e and a combining acute, as some keyboards type it
    assert send(port, post_body(nickname=decomposed))[0] == 204
    [student] = made.register.snapshot()["students"]
    assert student["nickname"] == "Jos\u00e9 \U0001f600"


def test_one_address_starts_at_most_its_share_of_the_class_and_another_still_joins():
    # a bucket that never runs dry: what is held here is the number of students, not of posts
    made = Classroom(token=TOKEN, room=ROOM, limiter=RateLimiter(burst=10_000))
    share = teacher_view.MAX_STUDENTS_PER_ADDRESS
    refusals = []
    for n in range(479):  # what one address made of a class in 60 s before
        try:
            made.post(
                teacher_view.ANSWERS_PATH, "192.0.2.66", None, post_body(student=f"{n:032x}", nickname=f"bot {n}")
            )
        except ClassError as refusal:
            refusals.append((refusal.status, str(refusal)))
    assert len(made.register.snapshot()["students"]) == share
    assert len(refusals) == 479 - share
    assert refusals[0] == (
        403,
        f"this device has started {share} students already, the most one address may: "
        "ask your teacher to remove the ones no longer in use",
    )
    # a student already started goes on answering from that address
    made.post(teacher_view.ANSWERS_PATH, "192.0.2.66", None, post_body(student=f"{0:032x}", kind="e2m1-code"))
    # a real student elsewhere joins
    assert made.post(teacher_view.ANSWERS_PATH, "192.0.2.7", None, post_body(student="c" * 32, nickname="Ana")) is None
    # removing one of that address's students frees a place for it, and only one
    made.register.remove(f"{5:032x}")
    made.post(teacher_view.ANSWERS_PATH, "192.0.2.66", None, post_body(student="d" * 32))
    with pytest.raises(ClassError) as again:
        made.post(teacher_view.ANSWERS_PATH, "192.0.2.66", None, post_body(student="e" * 32))
    assert again.value.status == 403
    assert len(made.register.snapshot()["students"]) == share + 1


def test_the_class_wide_cap_still_holds_across_addresses_and_removing_frees_a_place():
    register = Register(max_students=3, max_per_address=2)
    for n in range(3):
        register.record(read_post(post_body(student=f"{n:032x}")), f"192.0.2.{n}")
    with pytest.raises(ClassError) as full:
        register.record(read_post(post_body(student="f" * 32)), "192.0.2.9")
    assert full.value.status == 403 and "the class is full" in str(full.value)
    register.remove(f"{1:032x}")
    register.record(read_post(post_body(student="f" * 32)), "192.0.2.9")
    assert ids(register.snapshot()) == [f"{0:032x}", f"{2:032x}", "f" * 32]


def test_the_teacher_removes_a_student(room_server):
    made, port = room_server
    send(port, post_body(student="a" * 32, nickname="Ana"))
    send(port, post_body(student="b" * 32, nickname="Ana"))
    status, reply = change(port, teacher_view.REMOVE_PATH, {"student": "a" * 32})
    assert status == 200
    assert reply["room"] == ROOM and ids(reply) == ["b" * 32]  # the room after the change, for the page to draw
    assert ids(made.register.snapshot()) == ["b" * 32]
    status, reply = change(port, teacher_view.REMOVE_PATH, {"student": "a" * 32})
    assert status == 404 and reply["error"] == "no student in this class has that id: removed or merged already?"
    # a removed student whose page posts again comes back, as a new row at the end
    send(port, post_body(student="a" * 32, nickname="Ana"))
    assert ids(made.register.snapshot()) == ["b" * 32, "a" * 32]


def test_the_teacher_merges_a_student_who_came_back_under_a_new_id(room_server):
    made, port = room_server
    old, new = "a" * 32, "b" * 32
    made.register.record(read_post(post_body(student=old, kind="nibble-decode", answer="1")), "192.0.2.1", at=100.0)
    made.register.record(read_post(post_body(student=old, kind="e2m1-code", answer="old")), "192.0.2.1", at=300.0)
    made.register.record(read_post(post_body(student=old, kind="only-old", answer="x")), "192.0.2.1", at=50.0)
    made.register.record(read_post(post_body(student=new, nickname="Ana", answer="2")), "192.0.2.1", at=200.0)
    made.register.record(read_post(post_body(student=new, kind="e2m1-code", answer="new")), "192.0.2.1", at=250.0)
    status, reply = change(port, teacher_view.MERGE_PATH, {"from": new, "into": old})
    assert status == 200 and ids(reply) == [old]
    [merged] = reply["students"]
    # the newer answer to each exercise, the one answered last at the end
    assert {kind: entry["answer"] for kind, entry in merged["answers"].items()} == {
        "only-old": "x",
        "nibble-decode": "2",
        "e2m1-code": "old",
    }
    assert list(merged["answers"]) == ["only-old", "nibble-decode", "e2m1-code"]
    assert merged["nickname"] == "Ada"  # the name posted last: the old row answered last
    # the page still posting under the merged-away id adds to the row kept
    assert send(port, post_body(student=new, nickname="Ana", kind="mxfp4-decode"))[0] == 204
    [merged] = made.register.snapshot()["students"]
    assert merged["student"] == old and merged["nickname"] == "Ana" and "mxfp4-decode" in merged["answers"]
    status, reply = change(port, teacher_view.MERGE_PATH, {"from": new, "into": old})
    assert status == 404


def test_merges_follow_each_other_and_a_removal_forgets_them():
    register = Register(max_per_address=3)
    first, second, third = "1" * 32, "2" * 32, "3" * 32
    for n, key in enumerate((first, second, third)):
        register.record(read_post(post_body(student=key)), "192.0.2.1", at=float(n))
    register.merge(first, second)
    register.merge(second, third)
    register.record(read_post(post_body(student=first, kind="e2m1-code")), "192.0.2.1")
    assert ids(register.snapshot()) == [third]
    assert list(register.snapshot()["students"][0]["answers"]) == ["nibble-decode", "e2m1-code"]
    register.remove(third)
    # the address's places are free again, and an id merged into the removed row starts anew
    for key in (first, second, "4" * 32):
        register.record(read_post(post_body(student=key)), "192.0.2.1")
    assert ids(register.snapshot()) == [first, second, "4" * 32]


@pytest.mark.parametrize(
    ("path", "fields", "status", "says"),
    [
        (teacher_view.REMOVE_PATH, b"{", 400, "the post is not JSON: "),
        (teacher_view.REMOVE_PATH, b'["' + b"a" * 32 + b'"]', 400, "the post must be one JSON object"),
        (teacher_view.REMOVE_PATH, {}, 400, "the post lacks ['student']"),
        (
            teacher_view.REMOVE_PATH,
            {"student": "a" * 32, "all": True},
            400,
            "the post has fields it should not ('all')",
        ),
        (
            teacher_view.REMOVE_PATH,
            {"student": "A" * 32},
            400,
            "the post's student must be a student's id, 32 hex digits",
        ),
        (teacher_view.REMOVE_PATH, {"student": 7}, 400, "the post's student must be a student's id"),
        (teacher_view.REMOVE_PATH, {"student": "c" * 32}, 404, "no student in this class has that id"),
        (teacher_view.MERGE_PATH, {"from": "a" * 32}, 400, "the post lacks ['into']"),
        (teacher_view.MERGE_PATH, {"from": "a" * 32, "into": "\ud800"}, 400, "the post holds a lone surrogate"),
        (
            teacher_view.MERGE_PATH,
            {"from": "a" * 32, "into": "a" * 32},
            400,
            "a student cannot be merged into themself",
        ),
        (teacher_view.MERGE_PATH, {"from": "c" * 32, "into": "a" * 32}, 404, "no student in this class has that id"),
        (teacher_view.MERGE_PATH, {"from": "a" * 32, "into": "c" * 32}, 404, "no student in this class has that id"),
    ],
)
def test_a_teachers_change_that_is_wrong_is_refused_and_changes_nothing(room_server, path, fields, status, says):
    made, port = room_server
    send(port, post_body(student="a" * 32))
    send(port, post_body(student="b" * 32))
    before = made.register.snapshot()
    got, reply = change(port, path, fields)
    assert got == status and reply["error"].startswith(says), reply
    assert made.register.snapshot() == before


@pytest.mark.parametrize("path", [teacher_view.REMOVE_PATH, teacher_view.MERGE_PATH])
@pytest.mark.parametrize(
    ("authorization", "status"), [(None, 401), ("Bearer not-the-token", 403), (f"Basic {TOKEN}", 401)]
)
def test_a_teachers_change_needs_the_teachers_token(room_server, path, authorization, status):
    made, port = room_server
    send(port, post_body(student="a" * 32))
    send(port, post_body(student="b" * 32))
    fields = {"student": "a" * 32} if path == teacher_view.REMOVE_PATH else {"from": "a" * 32, "into": "b" * 32}
    got, reply = change(port, path, fields, authorization)
    assert got == status and "token" in reply["error"]
    assert ids(made.register.snapshot()) == ["a" * 32, "b" * 32]


def test_the_first_answer_the_tries_and_an_asked_for_working_are_kept_with_the_last_answer(room_server):
    _, port = room_server
    status, _, _ = send(port, post_body(answer="1.5", first="3", tries=2, shown=False))
    assert status == 204
    status, _, _ = send(port, post_body(kind="e8m0-rule", answer="130", first="130", tries=1, shown=True))
    assert status == 204
    _, body = results(port, f"Bearer {TOKEN}")
    answers = body["students"][0]["answers"]
    kept = {kind: {key: entry[key] for key in ("answer", "first", "tries", "shown")} for kind, entry in answers.items()}
    assert kept == {
        "nibble-decode": {"answer": "1.5", "first": "3", "tries": 2, "shown": False},
        "e8m0-rule": {"answer": "130", "first": "130", "tries": 1, "shown": True},
    }


def test_a_post_of_a_page_from_before_the_tries_were_kept_is_told_to_reload(room_server):
    made, port = room_server
    old = {key: value for key, value in json.loads(post_body()).items() if key not in ("first", "tries", "shown")}
    status, _, body = send(port, json.dumps(old).encode("utf-8"))
    assert status == 400
    assert json.loads(body)["error"] == (
        "this page is from an earlier version of the lab and does not say how many tries an answer took: "
        "reload it, and check the answer again"
    )
    assert made.register.snapshot() == {"students": []}
    # a post missing only some of the new fields is an ordinary wrong post, and says what it lacks
    status, _, body = send(port, json.dumps({**old, "first": "1"}).encode("utf-8"))
    assert status == 400 and json.loads(body)["error"] == "the post lacks ['shown', 'tries']"


def test_the_longest_post_a_page_sends_fits_the_body_limit(room_server):
    """Two answers of 200 characters that JSON spells as escapes, and a name of 24 emoji, as a
    browser's JSON.stringify writes them: taken, not refused as too large."""
    made, port = room_server
    body = post_body(nickname="\U0001f600" * 24, answer="\x01" * 200, first="\x01" * 200, tries=9999, shown=True)
    assert 2400 < len(body) <= teacher_view.MAX_BODY_BYTES
    status, _, reply = send(port, body)
    assert status == 204, reply
    assert made.register.snapshot()["students"][0]["answers"]["nibble-decode"]["tries"] == 9999

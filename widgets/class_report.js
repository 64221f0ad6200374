// A student's side of the teacher's view (serve --class, classroom/teacher_view.py): on a page of
// that server the exercises send each answer they check, under the nickname the student typed,
// to POST /class/answers. Elsewhere (a plain serve, the live course, a file) there is no class
// cookie and this does nothing, and neither does a sealed single-file explainer. The nickname
// and a random id for this browser (so a new nickname is the same student) are kept in
// localStorage[CLASS_STORE_KEY]; a stored value this did not write is set aside, never shown.
import { classRoomOf, readNickname } from "./codec/teach/classroom.js";
import { visibleText } from "./codec/text.js";
import { pageStorage } from "./page_storage.js";

const CLASS_STORE_KEY = "four-bit-lab:class";
const ANSWERS_URL = "/class/answers";

// A page whose own policy forbids it to connect anywhere (a single-file explainer, sealed by its
// Content-Security-Policy) cannot send an answer, so it does not offer to.
function mayConnect() {
  const policy = globalThis.document?.querySelector('meta[http-equiv="Content-Security-Policy" i]')?.content ?? "";
  return !/default-src\s+'none'/.test(policy) || /connect-src/.test(policy);
}

function studentId() {
  return [...globalThis.crypto.getRandomValues(new Uint8Array(16))].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * The reporter for this page, or null where the page belongs to no class. `onStatus(text)` hears
 * what became of each post, in words for the student.
 */
export function classReporter(onStatus) {
  const where = globalThis.location;
  const port = where?.port || (where?.protocol === "https:" ? "443" : "80");
  const room = classRoomOf(globalThis.document?.cookie ?? "", port);
  if (room === null || !mayConnect()) return null;
  const storage = pageStorage(CLASS_STORE_KEY);
  let kept = { student: studentId(), nickname: "" };
  try {
    const stored = JSON.parse(storage?.getItem(CLASS_STORE_KEY) ?? "null");
    if (/^[0-9a-f]{32}$/.test(stored?.student) && typeof stored.nickname === "string" && readNickname(stored.nickname).ok) kept = stored;
    else if (typeof stored?.student === "string" && /^[0-9a-f]{32}$/.test(stored.student)) kept.student = stored.student;
  } catch {
    // not JSON: set aside, written over below
  }
  const save = () => {
    try {
      storage?.setItem(CLASS_STORE_KEY, JSON.stringify(kept));
    } catch {
      // full or turned off: the name lasts as long as the page
    }
  };
  save();
  return {
    nickname: () => kept.nickname,
    /** Take a typed nickname: {ok: true} or {ok: false, message}. */
    setNickname(text) {
      const read = readNickname(text);
      if (!read.ok) return read;
      kept = { ...kept, nickname: read.value };
      save();
      onStatus(`Your answers go to the teacher's screen as “${visibleText(read.value)}”.`);
      return { ok: true };
    },
    /** Send one checked answer: {kind, seed, round, answer}. */
    async report(entry) {
      if (!kept.nickname) {
        onStatus("Type a name above so that your teacher sees your answers; until then they stay in this browser.");
        return;
      }
      const body = JSON.stringify({ room, student: kept.student, nickname: kept.nickname, ...entry });
      try {
        const reply = await fetch(ANSWERS_URL, { method: "POST", headers: { "Content-Type": "application/json" }, body });
        if (reply.ok) onStatus(`Sent to the teacher's screen as “${visibleText(kept.nickname)}”.`);
        else {
          const said = await reply.json().catch(() => ({}));
          onStatus(`The teacher's screen did not take that answer: ${visibleText(String(said.error ?? reply.status), 200)}. It is kept in this browser.`);
        }
      } catch {
        onStatus("The teacher's server did not answer; your answer is kept in this browser.");
      }
    },
  };
}

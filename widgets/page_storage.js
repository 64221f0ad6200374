// What a page may keep in the browser, for the widgets that keep something there (exercises.js,
// class_report.js).

/** localStorage, or null where this page may keep nothing (storage turned off, a sandbox): even
 * reading the property, or `key` in it, can throw. */
export function pageStorage(key) {
  try {
    const storage = globalThis.localStorage ?? null;
    storage?.getItem(key);
    return storage;
  } catch {
    return null;
  }
}

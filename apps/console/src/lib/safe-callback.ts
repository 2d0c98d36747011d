// Where a sign-in may send the user afterwards. Shared by the sign-in page (server), its form
// (browser) and next-auth's `redirect` callback, so the three cannot disagree.

// C0 controls, DEL and C1 controls. The URL parser silently drops tab and newline ("/\t/evil" parses
// as "//evil") and a Location header cannot carry them: any of them refuses the value outright.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * A same-origin path (`/jobs?state=DEAD#x`) for `value`, or `/`. Only a relative path starting
 * with one `/` is considered; it is parsed with `new URL(value, consoleOrigin)` and kept only when
 * the result has the console's origin. Refused (→ `/`): missing or repeated values, control
 * characters, backslashes (browsers read `\` as `/`), `//host`, `/\t/host`, absolute URLs,
 * `javascript:` and every other scheme.
 */
export const safeCallbackPath = (value: unknown, consoleOrigin: string): string => {
  const v = Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
  if (typeof v !== "string" || v.length === 0 || v.length > 2048) return "/";
  if (CONTROL.test(v) || v.includes("\\") || !v.startsWith("/") || v.startsWith("//")) return "/";
  let base: URL;
  let url: URL;
  try {
    base = new URL(consoleOrigin);
    url = new URL(v, base);
  } catch {
    return "/";
  }
  if (url.origin !== base.origin) return "/";
  return `${url.pathname}${url.search}${url.hash}`;
};

/** The same, as an absolute URL on the console's origin (what next-auth's `redirect` callback returns). */
export const safeCallbackUrl = (value: unknown, consoleOrigin: string): string => `${new URL(consoleOrigin).origin}${safeCallbackPath(value, consoleOrigin)}`;

// Display helpers (client side: times are shown in the browser's zone).

/** `2026-11-30 14:03:07` in local time, or an em dash. */
export const dateTime = (iso: string | null | undefined): string => {
  if (!iso) return "—";
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
};

/** `2026-11-30 14:03:07.482` in local time (the job page: an attempt's times to the millisecond), or an em dash. */
export const dateTimeMs = (iso: string | null | undefined): string =>
  iso ? `${dateTime(iso)}.${String(new Date(iso).getMilliseconds()).padStart(3, "0")}` : "—";

/** `850 ms`, `4.2 s`, `3 min 5 s`, `2 h 10 min`, `3 d 4 h`. */
export const duration = (ms: number | null | undefined): string => {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(ms)} ms`;
  const s = abs / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  const join = (a: string, n: number, unit: string) => (n ? `${a} ${n} ${unit}` : a);
  if (m < 60) return join(`${m} min`, Math.round(s % 60), "s");
  const h = Math.floor(m / 60);
  if (h < 48) return join(`${h} h`, m % 60, "min");
  return join(`${Math.floor(h / 24)} d`, h % 24, "h");
};

/** `12 s ago`, `in 3 min` relative to now. */
export const ago = (iso: string | null | undefined, now = Date.now()): string => {
  if (!iso) return "—";
  const diff = now - new Date(iso).getTime();
  return diff >= 0 ? `${duration(diff)} ago` : `in ${duration(-diff)}`;
};

/**
 * A uuid shortened for tables: its last 12 hex digits. Job ids are UUIDv7, whose first digits are
 * a millisecond timestamp (jobs enqueued together share them); the tail is random, so rows differ.
 * The full id stays in the link, its title and the copy button.
 */
export const idTail = (id: string): string => (id.length > 12 ? `…${id.slice(-12)}` : id);

/** 1,234 */
export const count = (n: number | null | undefined): string => (n === null || n === undefined ? "—" : n.toLocaleString("en-US"));

/** JSON for display. */
export const pretty = (value: unknown): string => JSON.stringify(value, null, 2);

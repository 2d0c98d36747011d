import type { SafeFailure } from "@porter/contracts";

// The tenant-safe projection of a job's error (issue 13): what a tenant may read of a failure on
// its status page, the status stream and its webhooks. It is an allow-list — code, class and a
// scrubbed message, nothing else of the raw error (trace id, worker version, checkpoint stay on
// the operator's side) — and the message is scrubbed by replacement, not by judgement: anything
// shaped like a URL, host, IP, path, e-mail or credential becomes a placeholder. Over-redaction is
// the accepted cost. The DLQ normalizer (dlq.sql) has a different purpose (grouping similar
// messages) and keeps things a tenant must not see; its patterns were borrowed, not its policy.

const CODE = /^[A-Z][A-Z0-9_]{0,99}$/;
const CLASSES = ["retryable", "permanent", "timeout", "lease_expired", "cancelled", "expired"] as const;
/** The class shown when the raw error's class is missing or unknown. */
const DEFAULT_CLASS: SafeFailure["class"] = "permanent";
/** Output cap (ZSafeFailure.message). */
export const SAFE_MESSAGE_MAX = 300;
/** Input considered (after taking the first line): the regexes below never see more. */
const INPUT_MAX = 4000;

const TLDS =
  "com|net|org|io|dev|app|cloud|internal|local|localhost|lan|corp|home|intra|svc|cluster|test|example|invalid|ai|co|us|eu|uk|de|fr|nl|jp|cn|ru|br|in|au|ca|ch|se|info|biz|xyz|me|tech|site|online|aws|gcp|azure";

/** Replacements in order: earlier ones consume text later ones would only partly match. */
const RULES: [RegExp, string | ((m: string, ...g: string[]) => string)][] = [
  // JWTs (three base64url parts, the first one `{"` encoded).
  [/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?/g, "<redacted>"],
  // Any URL, credentials and query included.
  [/\b[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s"'<>`]+/g, "<url>"],
  // user:password@host without a scheme.
  [/[^\s:@/"'`<>()]+:[^\s@/"'`<>()]+@[^\s"'`<>()]+/g, "<url>"],
  [/\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b/g, "<email>"],
  // Authorization schemes.
  [/\b(bearer|basic|digest|token)(\s+)[A-Za-z0-9._~+/=-]{6,}/gi, "$1$2<redacted>"],
  // key=value / key: value where the key names a credential.
  [
    /\b([A-Za-z0-9_.-]*(?:key|passwd|password|passphrase|pwd|token|secret|auth|credential|session|cookie|signature)[A-Za-z0-9_.-]*)(["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&)]+)/gi,
    "$1$2<redacted>",
  ],
  // AWS access key ids and prefixed API tokens (sk_live_…, ghp_…, xoxb-…, glpat-…, whsec_…).
  [/\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b/g, "<redacted>"],
  [/\b(?:sk|pk|rk|ghp|gho|ghu|ghs|ghr|github_pat|xox[abprs]|glpat|npm|whsec|shpat|key)[_-][A-Za-z0-9_-]{8,}/g, "<redacted>"],
  // Windows paths (drive and UNC), then unix ones (absolute, ~/, ./, ../), then relative ones
  // with a file extension (src/db/pool.ts:12:5).
  [/\b[A-Za-z]:\\[^\s"'<>|`]*/g, "<path>"],
  [/\\\\[^\s"'<>|`]+/g, "<path>"],
  [/(^|[\s"'`(=:,[])(?:~|\.{1,2})?\/[^\s"'`<>()[\],;]+/g, "$1<path>"],
  [/\b[\w.-]+(?:\/[\w.-]+)+\.[A-Za-z0-9]{1,8}(?::\d+)*\b/g, "<path>"],
  // IPs (v4 with port, bracketed v6, bare v6 with at least four groups).
  [/\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g, "<ip>"],
  [/\[[0-9a-fA-F:.]+\](?::\d+)?/g, "<ip>"],
  [/(?<![\w:])[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){3,7}(?![\w:])/g, "<ip>"],
  // Host names: a known TLD, or three labels or more; localhost with a port.
  [new RegExp(`\\b[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\.(?:${TLDS})\\b(?::\\d+)?`, "gi"), "<host>"],
  // (A dotted exception name — requests.exceptions.ConnectionError — is not a host.)
  [/\b[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+){2,}(?::\d+)?\b/g, (m) => (/(Error|Exception|Warning)$/.test(m) ? m : "<host>")],
  [/\blocalhost(?::\d+)?\b/gi, "<host>"],
  // Long hex runs (digests, keys, session ids) and long mixed base64 runs.
  [/\b[0-9a-fA-F]{16,}\b/g, "<redacted>"],
  [/[A-Za-z0-9+/_-]{20,}={0,2}/g, (m) => (/\d/.test(m) && /[A-Za-z]/.test(m) ? "<redacted>" : m)],
];

/** The line of a multi-line message to keep: a Python traceback's exception line, else the first. */
function headline(message: string): string {
  const lines = message.split(/\r\n|\r|\n/).filter((l) => l.trim() !== "");
  if (lines.length === 0) return "";
  if (/^\s*Traceback \(most recent call last\)/.test(lines[0] ?? "")) {
    const last = [...lines].reverse().find((l) => !/^\s/.test(l) && !/^Traceback/.test(l));
    return last ?? "";
  }
  return lines[0] ?? "";
}

/** Scrubs one message (see the module comment): first line, placeholders, collapsed whitespace, ≤ 300 chars. */
export function safeMessage(raw: string): string {
  let m = headline(raw);
  if (m.length > INPUT_MAX) {
    // Cut at a space and drop the cut word, so no half of a secret survives the cut.
    const cut = m.lastIndexOf(" ", INPUT_MAX);
    m = cut > 0 ? m.slice(0, cut) : "";
  }
  // An inline stack frame left on the first line (`… at fn (file:1:2)`).
  m = m.replace(/\s+at\s+\S+\s+\([^)]*:\d+:\d+\)/g, "");
  for (const [pattern, replacement] of RULES) {
    m = m.replace(pattern, replacement as string);
  }
  m = m.replace(/\s+/g, " ").trim();
  if (m.length > SAFE_MESSAGE_MAX) {
    m = `${m.slice(0, SAFE_MESSAGE_MAX - 1).trimEnd()}…`;
  }
  return m;
}

/**
 * The tenant-safe projection of a job error (`ZJobError` shape, or anything): `code` if it looks
 * like one of ours (`/^[A-Z][A-Z0-9_]{0,99}$/`, else null), `class` if known (else "permanent"),
 * and the scrubbed `message`. Returns null when there is no error (null, undefined, a primitive
 * other than a string). Never copies any other field.
 */
export function safeFailure(error: unknown): SafeFailure | null {
  if (typeof error === "string") return { code: null, class: DEFAULT_CLASS, message: safeMessage(error) };
  if (error === null || typeof error !== "object") return null;
  const e = error as Record<string, unknown>;
  const code = typeof e.code === "string" && CODE.test(e.code) ? e.code : null;
  const cls = CLASSES.find((c) => c === e.class) ?? DEFAULT_CLASS;
  const message = typeof e.message === "string" ? safeMessage(e.message) : "";
  return { code, class: cls, message };
}

import { ZSafeFailure } from "@porter/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SAFE_MESSAGE_MAX, safeFailure, safeMessage } from "./safe-failure";

const jobError = (message: string, extra: Record<string, unknown> = {}) => ({
  code: "HANDLER_ERROR",
  class: "retryable",
  message,
  worker_version: "1.2.3",
  attempt: 2,
  trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
  last_checkpoint: { cursor: "secret-cursor" },
  ...extra,
});

describe("safeFailure: the allow-list", () => {
  it("keeps code, class and message only", () => {
    const f = safeFailure(jobError("boom"));
    expect(f).toEqual({ code: "HANDLER_ERROR", class: "retryable", message: "boom" });
    expect(ZSafeFailure.parse(f)).toEqual(f);
  });
  it("drops a code that is not ours, defaults an unknown class", () => {
    expect(safeFailure(jobError("x", { code: "ECONNREFUSED 10.0.0.1", class: "weird" }))).toEqual({
      code: null,
      class: "permanent",
      message: "x",
    });
    expect(safeFailure(jobError("x", { code: "lowercase" }))?.code).toBeNull();
    expect(safeFailure(jobError("x", { code: `A${"B".repeat(100)}` }))?.code).toBeNull();
    expect(safeFailure({ message: 42 })).toEqual({ code: null, class: "permanent", message: "" });
  });
  it("returns null for no error", () => {
    expect(safeFailure(null)).toBeNull();
    expect(safeFailure(undefined)).toBeNull();
    expect(safeFailure(7)).toBeNull();
  });
});

// Realistic messages, each with what must go and (optionally) what should stay.
const FIXTURES: [string, string, string[], string[]][] = [
  [
    "a postgres URL with credentials",
    "connect failed: postgres://app:hunter2@db.prod.internal:5432/orders?sslmode=require",
    ["hunter2", "db.prod.internal", "orders", "app:"],
    ["connect failed: <url>"],
  ],
  ["user:password@host without a scheme", "could not reach admin:s3cr3t@10.0.4.7:6379 (redis)", ["s3cr3t", "10.0.4.7", "admin"], ["(redis)"]],
  [
    "a node stack trace",
    "TypeError: Cannot read properties of undefined (reading 'id')\n    at handle (/srv/app/dist/handlers/invoice.js:41:17)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    ["/srv/app", "invoice.js", "task_queues", "\n"],
    ["TypeError: Cannot read properties of undefined (reading 'id')"],
  ],
  [
    "a python traceback",
    "Traceback (most recent call last):\n  File \"/opt/worker/app/tasks.py\", line 88, in run\n    resp = client.get(url)\nrequests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.partner.com', port=443): Max retries exceeded",
    ["/opt/worker", "tasks.py", "api.partner.com", "client.get", "Traceback"],
    ["requests.exceptions.ConnectionError", "Max retries exceeded"],
  ],
  [
    "a SQL error with host and IP",
    'connection to server at "pg-primary.eu-west-1.rds.amazonaws.com" (172.31.9.14), port 5432 failed: FATAL: password authentication failed for user "app"',
    ["pg-primary", "amazonaws", "172.31.9.14"],
    ["password authentication failed"],
  ],
  [
    "a unique violation (DETAIL on the second line)",
    'duplicate key value violates unique constraint "users_email_key"\nDETAIL: Key (email)=(jane.doe@acme.com) already exists.',
    ["jane.doe", "acme.com"],
    ['duplicate key value violates unique constraint "users_email_key"'],
  ],
  [
    "a JWT in a header dump",
    "401 from upstream, Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ["eyJhbGci", "dozjgNryP4J3"],
    ["401 from upstream"],
  ],
  [
    "an AWS key and secret",
    "S3 upload denied for AKIAIOSFODNN7EXAMPLE, aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI"],
    ["S3 upload denied"],
  ],
  [
    "prefixed API tokens",
    "stripe rejected sk_live_51HxYzABCdefGHIjkl and github said ghp_16C7e42F292c6912E7710c838347Ae178B4a bad",
    ["sk_live_51Hx", "ghp_16C7e42F"],
    ["stripe rejected", "github said"],
  ],
  [
    "key=value credentials",
    "login failed password=correct-horse token: abc.def api_key='zzz-top' secret=\"s p a c e\"",
    ["correct-horse", "abc.def", "zzz-top", "s p a c e"],
    ["login failed", "password=<redacted>"],
  ],
  [
    "windows paths",
    "ENOENT: no such file or directory, open 'C:\\Users\\build\\AppData\\Local\\cfg.json' via \\\\fileserver\\share\\x",
    ["C:\\Users", "build", "fileserver"],
    ["ENOENT: no such file or directory"],
  ],
  [
    "unix and relative paths",
    "cannot load /etc/porter/keys.pem or ~/secrets/.env or src/db/pool.ts:12:5",
    ["/etc/porter", "keys.pem", "secrets", "pool.ts"],
    ["cannot load <path>"],
  ],
  [
    "hosts, localhost and IPv6",
    "getaddrinfo ENOTFOUND payments.internal; also localhost:8080 and [2001:db8::1]:443 and fe80::1:2:3:4",
    ["payments.internal", "8080", "2001:db8", "fe80"],
    ["getaddrinfo ENOTFOUND <host>"],
  ],
  [
    "an e-mail and a long hex digest",
    "mail to ops@example.org failed, digest 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    ["ops@", "9f86d0818"],
    ["failed, digest <redacted>"],
  ],
];

describe("safeMessage: realistic errors", () => {
  it.each(FIXTURES)("%s", (_name, message, gone, kept) => {
    const out = safeFailure(jobError(message))?.message ?? "";
    for (const g of gone) expect(out).not.toContain(g);
    for (const k of kept) expect(out).toContain(k);
    expect(out.length).toBeLessThanOrEqual(SAFE_MESSAGE_MAX);
  });
  it("keeps ordinary messages readable", () => {
    expect(safeMessage("Invoice 42 could not be rendered: template missing")).toBe("Invoice 42 could not be rendered: template missing");
    expect(safeMessage("foo.bar is not a function")).toBe("foo.bar is not a function");
    expect(safeMessage("  lots \t of\u00a0  space  ")).toBe("lots of space");
  });
  it("caps at 300 characters", () => {
    expect(safeMessage("word ".repeat(500)).length).toBe(SAFE_MESSAGE_MAX);
  });
});

// Generators of things that must never reach a tenant.
const alnum = (min: number, max: number) => fc.stringMatching(new RegExp(`^[a-z0-9]{${min},${max}}$`)).filter((s) => /[a-z]/.test(s));
const label = fc.stringMatching(/^[a-z][a-z0-9-]{1,10}[a-z0-9]$/);
const tld = fc.constantFrom("com", "net", "io", "internal", "local", "dev", "cloud", "svc");
const host = fc.oneof(
  fc.tuple(fc.array(label, { minLength: 1, maxLength: 3 }), tld).map(([ls, t]) => `${ls.join(".")}.${t}`),
  fc.array(label, { minLength: 3, maxLength: 4 }).map((ls) => ls.join(".")),
);
const ip = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join("."));
const b64 = (n: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9_-]{${n}}$`));
const secret = fc.oneof(
  host,
  ip.map((i) => `${i}:5432`),
  fc.tuple(alnum(3, 8), alnum(8, 16), host).map(([u, p, h]) => `https://${u}:${p}@${h}/x?y=1`),
  fc.tuple(alnum(3, 8), alnum(8, 16), host).map(([u, p, h]) => `${u}:${p}@${h}`),
  fc.array(alnum(3, 8), { minLength: 2, maxLength: 4 }).map((ps) => `/${ps.join("/")}`),
  fc.array(alnum(3, 8), { minLength: 2, maxLength: 4 }).map((ps) => `C:\\${ps.join("\\")}`),
  fc.tuple(alnum(3, 8), host).map(([u, h]) => `${u}@${h}`),
  fc.tuple(b64(20), b64(30), b64(30)).map(([a, b, c]) => `eyJ${a}.${b}.${c}`),
  fc.stringMatching(/^[A-Z0-9]{16}$/).map((s) => `AKIA${s}`),
  fc.tuple(fc.constantFrom("ghp_", "sk_live_", "xoxb-", "glpat-"), b64(24)).map(([p, s]) => p + s),
  fc.stringMatching(/^[0-9a-f]{32,64}$/),
);
const keyed = fc.tuple(fc.constantFrom("password", "api_key", "token", "secret", "X-Auth"), alnum(8, 20)).map(([k, v]) => ({ text: `${k}=${v}`, secret: v }));
const filler = fc.stringMatching(/^[A-Za-z ,.:()!?'-]{0,80}$/);
const sep = fc.constantFrom(" ", ": ", " (", ' "', ", ", "\t");

describe("safeMessage: properties", () => {
  it("a secret, host or path embedded anywhere never appears in the output", () => {
    fc.assert(
      fc.property(filler, sep, secret, sep, filler, (before, s1, s, s2, after) => {
        const out = safeMessage(`${before}${s1}${s}${s2}${after}`);
        expect(out).not.toContain(s);
      }),
      { numRuns: 500 },
    );
  });
  it("a credential's value after key= never appears", () => {
    fc.assert(
      fc.property(filler, keyed, filler, (before, k, after) => {
        expect(safeMessage(`${before} ${k.text} ${after}`)).not.toContain(k.secret);
      }),
    );
  });
  it("any error: only the three keys, a valid SafeFailure, message ≤ 300", () => {
    fc.assert(
      fc.property(fc.anything(), fc.string({ maxLength: 6000 }), (code, message) => {
        const f = safeFailure({ code, class: code, message, trace_id: "t", worker_version: "w", extra: 1 });
        expect(f).not.toBeNull();
        expect(Object.keys(f ?? {}).sort()).toEqual(["class", "code", "message"]);
        expect(ZSafeFailure.safeParse(f).success).toBe(true);
        expect(f?.message.length).toBeLessThanOrEqual(SAFE_MESSAGE_MAX);
      }),
    );
  });
});

import { useTestDatabase } from "@porter/db/testing/test-database";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

// The fingerprint normalizer (porter_normalize_error_message, sql/routines/dlq.sql) with realistic
// messages: what varies between occurrences of one bug goes, what tells two bugs apart stays.
const db = useTestDatabase();

const normalize = async (message: string | null): Promise<string> =>
  (await db.pool.query<{ n: string }>(`SELECT porter_normalize_error_message($1) AS n`, [message])).rows[0]!.n;
const fingerprint = async (jobType: string, code: string, klass: string, message: string): Promise<string> =>
  (await db.pool.query<{ f: string }>(`SELECT porter_dlq_fingerprint($1, $2, $3, $4) AS f`, [jobType, code, klass, message])).rows[0]!.f;
/** Every message normalizes to the same text; returns it. */
const sameFor = async (messages: string[]): Promise<string> => {
  const out = await Promise.all(messages.map(normalize));
  expect(new Set(out).size, out.join("\n")).toBe(1);
  return out[0]!;
};

describe("porter_normalize_error_message", () => {
  it("HTTP errors: different ids, hosts and query strings in the URL give one text; the status stays", async () => {
    expect(
      await sameFor([
        "Request failed with status code 503: GET https://api.example.com/v1/orders/8812?expand=items",
        "Request failed with status code 503: GET https://api-eu.example.com/v1/orders/17?expand=items&x=1",
        "Request failed with status code 503: GET http://10.1.2.3:8080/v1/orders/abc",
      ]),
    ).toBe("Request failed with status code 503: GET <url>");
    expect(await normalize("Request failed with status code 404: GET https://api.example.com/v1/orders/8812")).toBe(
      "Request failed with status code 404: GET <url>",
    );
    expect(
      await sameFor(["HTTP 404 Not Found: https://billing.internal/customers/cus_9Qz81/invoices", "HTTP 404 Not Found: https://b.internal/c/cus_X/i"]),
    ).toBe("HTTP 404 Not Found: <url>");
  });

  it("SQL errors: duplicate key keeps the constraint and drops the value; deadlocks and syntax errors lose pids, xids and quoted text", async () => {
    expect(
      await sameFor([
        'duplicate key value violates unique constraint "orders_pkey"\nDETAIL: Key (id)=(4411) already exists.',
        'duplicate key value violates unique constraint "orders_pkey"\nDETAIL: Key (id)=(98) already exists.',
      ]),
    ).toBe('duplicate key value violates unique constraint "orders_pkey" DETAIL: Key (id)=(<v>) already exists.');
    expect(await normalize('duplicate key value violates unique constraint "users_email_key"')).toBe(
      'duplicate key value violates unique constraint "users_email_key"',
    );
    expect(
      await sameFor([
        'deadlock detected\nDETAIL: Process 4242 waits for ShareLock on transaction 77123; blocked by process 4243.\nHINT: See server log for query details.\nCONTEXT: while updating tuple (0,12) in relation "accounts"',
        'deadlock detected\nDETAIL: Process 17 waits for ShareLock on transaction 9; blocked by process 18.\nHINT: See server log for query details.\nCONTEXT: while updating tuple (3,1) in relation "accounts"',
      ]),
    ).toBe("deadlock detected DETAIL: Process <n> waits for ShareLock on transaction <n>; blocked by process <n>. HINT: See server log for query details.");
    expect(await sameFor(['syntax error at or near "SELEC" at character 15', 'syntax error at or near "FORM" at character 231'])).toBe(
      'syntax error at or near "<v>" at character <n>',
    );
    expect(await normalize('relation "invoices" does not exist')).toBe('relation "invoices" does not exist');
  });

  it("provider 429s: request ids, organisations, limits and retry-after durations go; the model name stays", async () => {
    const openai = (org: string, used: number, wait: string) =>
      `Rate limit reached for gpt-4o in organization ${org} on tokens per min (TPM): Limit 30000, Used ${used}, Requested 512. Please try again in ${wait}. Visit https://platform.openai.com/account/rate-limits to learn more.`;
    expect(await sameFor([openai("org-abc123XYZ", 29876, "2.4s"), openai("org-Zz9988qq", 30001, "59s")])).toBe(
      "Rate limit reached for gpt-4o in organization <id> on tokens per min (TPM): Limit <n>, Used <n>, Requested <n>. Please try again in <n>s. Visit <url> to learn more.",
    );
    expect(await normalize(openai("org-abc123XYZ", 1, "120ms"))).toContain("try again in <n>ms");
    expect(await sameFor(["Too many requests (request id: req_8f3a9c2b7d1e4f60)", "Too many requests (request id: req_00aa11bb22)"])).toBe(
      "Too many requests (request id: <id>)",
    );
    expect(
      await sameFor([
        "Stripe 429: Request rate limit exceeded. Request req_Nq8ZK2e7Ab91 (idempotency key 5b0e2a3c-8d44-4c53-9a39-1ad5f0d1e2b7)",
        "Stripe 429: Request rate limit exceeded. Request req_7Yk3Lp0Qw2 (idempotency key 0f0e2a3c-8d44-4c53-9a39-1ad5f0d1e2b0)",
      ]),
    ).toBe("Stripe <n>: Request rate limit exceeded. Request <id> (idempotency key <uuid>)");
    // Provider ids with one digit or none still go; snake_case words stay.
    expect(
      await sameFor(["Upstream 503 (request id req_awk4iwhgdu)", "Upstream 503 (request id req_QwErTyUiOp)", "Upstream 503 (request id req_x8y9z0abcd)"]),
    ).toBe("Upstream <n> (request id <id>)");
    expect(await normalize("email_verification failed for users_email_key")).toBe("email_verification failed for users_email_key");
    expect(await normalize("No such customer: 'cus_NffrFeUfNV2Hib'; a similar object exists in test mode")).toBe(
      "No such customer: '<v>'; a similar object exists in test mode",
    );
  });

  it("node errors: addresses, ports and host names go", async () => {
    expect(await sameFor(["connect ECONNREFUSED 10.0.0.3:5432", "connect ECONNREFUSED 127.0.0.1:6379", "connect ECONNREFUSED [::1]:5432"])).toBe(
      "connect ECONNREFUSED <ip>",
    );
    expect(await sameFor(["connect ETIMEDOUT api.stripe.com:443", "connect ETIMEDOUT hooks.eu.example.io:8443"])).toBe("connect ETIMEDOUT <host>");
    expect(await sameFor(["getaddrinfo ENOTFOUND db-primary.prod.svc.cluster.local", "getaddrinfo ENOTFOUND db-replica-2.prod.svc.cluster.local"])).toBe(
      "getaddrinfo ENOTFOUND <host>",
    );
    expect(await normalize("Read app.config.json failed")).toBe("Read app.config.json failed");
  });

  it("durations are numbers with their unit, not ids; uuids, e-mails and hex hashes have placeholders", async () => {
    expect(await sameFor(["timeout of 30000ms exceeded", "timeout of 5000ms exceeded"])).toBe("timeout of <n>ms exceeded");
    expect(await normalize("job ran 1.5s, budget 512MB")).toBe("job ran <n>s, budget <n>MB");
    expect(
      await sameFor([
        "user 5b0e2a3c-8d44-4c53-9a39-1ad5f0d1e2b7 not found (alice@example.com)",
        "user 0190d7e4-0000-7000-8000-000000000001 not found (bob.smith+x@corp.co.uk)",
      ]),
    ).toBe("user <uuid> not found (<email>)");
    expect(
      await sameFor([
        "checksum mismatch: expected 9f86d081884c7d659a2feaa0c55ad015 got 5e884898da28047151d0e56f8dc62927",
        "checksum mismatch: expected 0123456789abcdef got fedcba9876543210",
      ]),
    ).toBe("checksum mismatch: expected <hex> got <hex>");
    expect(await normalize("order 123456789012345 failed")).toBe("order <n> failed");
    expect(
      await sameFor([
        "the worker stopped heartbeating; its lease expired at 2026-12-01 10:15:00.123+00",
        "the worker stopped heartbeating; its lease expired at 2026-11-30 23:59:59+00",
      ]),
    ).toBe("the worker stopped heartbeating; its lease expired at <time>");
    expect(await normalize("deadline 2026-12-01T10:15:00Z passed (created 2026-12-01)")).toBe("deadline <time> passed (created <time>)");
  });

  it("stack-less and multi-line messages: stack frames and tracebacks drop, lines join", async () => {
    expect(await normalize("TypeError: Cannot read properties of undefined (reading 'id')")).toBe(
      "TypeError: Cannot read properties of undefined (reading '<v>')",
    );
    expect(
      await sameFor([
        "Error: charge failed for order 881\n    at chargeCard (/app/dist/billing.js:120:11)\n    at async Worker.run (/app/node_modules/porter/worker.js:88:5)",
        "Error: charge failed for order 12\n    at chargeCard (/app/dist/billing.js:121:9)",
        "Error: charge failed for order 7",
      ]),
    ).toBe("Error: charge failed for order <n>");
    expect(
      await normalize(
        'Traceback (most recent call last):\n  File "/srv/app/tasks.py", line 42, in run\n    resp.raise_for_status()\nrequests.exceptions.HTTPError: 502 Server Error: Bad Gateway for url: https://x.example.com/a?b=1',
      ),
    ).toBe("requests.exceptions.HTTPError: <n> Server Error: Bad Gateway for url: <url>");
    expect(await normalize("first line\n\n\tsecond   line  ")).toBe("first line second line");
    expect(await normalize(null)).toBe("");
    expect((await normalize("x".repeat(2000))).length).toBe(500);
  });
});

describe("porter_dlq_fingerprint", () => {
  it("same bug with different ids → one fingerprint; another message, code, class or job type → another", async () => {
    const a = await fingerprint("billing.charge", "HTTP_503", "retryable", "GET https://api.example.com/orders/8812 failed after 30000ms");
    expect(await fingerprint("billing.charge", "HTTP_503", "retryable", "GET https://api.example.com/orders/17 failed after 5000ms")).toBe(a);
    const others = await Promise.all([
      fingerprint("billing.charge", "HTTP_503", "retryable", "POST https://api.example.com/orders/17 failed after 5000ms"),
      fingerprint("billing.charge", "HTTP_502", "retryable", "GET https://api.example.com/orders/17 failed after 5000ms"),
      fingerprint("billing.charge", "HTTP_503", "permanent", "GET https://api.example.com/orders/17 failed after 5000ms"),
      fingerprint("billing.refund", "HTTP_503", "retryable", "GET https://api.example.com/orders/17 failed after 5000ms"),
    ]);
    expect(new Set([a, ...others]).size).toBe(5);
  });

  it("property: a message template filled with any ids, numbers, uuids, hosts and quoted values has one fingerprint", async () => {
    const word = fc.stringMatching(/^[a-z]{3,10}$/);
    const filler = fc.record({
      n: fc.nat(),
      uuid: fc.uuid(),
      host: fc.tuple(word, word).map(([a, b]) => `${a}.${b}.example.com`),
      quoted: fc.stringMatching(/^[A-Za-z0-9 _-]{0,20}$/),
      id: fc.tuple(word, fc.integer({ min: 10, max: 99_999 })).map(([w, n]) => `${w}_${n}x${n}`),
      ms: fc.integer({ min: 1, max: 600_000 }),
    });
    await fc.assert(
      fc.asyncProperty(filler, filler, async (x, y) => {
        const msg = (f: typeof x) => `job ${f.n} for ${f.uuid} via ${f.host} with key '${f.quoted}' ref ${f.id} timed out after ${f.ms}ms`;
        const [fx, fy] = await Promise.all([fingerprint("t", "E", "retryable", msg(x)), fingerprint("t", "E", "retryable", msg(y))]);
        expect(fx).toBe(fy);
      }),
      { numRuns: 50 },
    );
  });

  it("property: messages that differ in their words have different fingerprints", async () => {
    const words = fc.array(fc.stringMatching(/^[a-z]{2,12}$/), { minLength: 1, maxLength: 8 }).map((w) => w.join(" "));
    await fc.assert(
      fc.asyncProperty(words, words, async (a, b) => {
        fc.pre(a !== b);
        expect(await fingerprint("t", "E", "retryable", a)).not.toBe(await fingerprint("t", "E", "retryable", b));
      }),
      { numRuns: 50 },
    );
  });
});

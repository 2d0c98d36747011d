import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";

// A batch of more than one chunk (250 rows) inserts its keys chunk by chunk in one transaction, and
// an inserted key stays locked to other producers until that transaction ends. Each chunk was sorted
// on its own, so two producers sending overlapping keys in different orders could each hold a chunk
// the other waits for: "deadlock detected", and one batch failed. Every producer now takes the keys
// in one order across the whole batch (sorted before chunking, in PostgreSQL's "C" order).
const db = useTestDatabase();
let producers: pg.Pool;

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "order" }], tenants: [{ id: "tenant_A" }] });
  producers = createPool(db.connectionString, { max: 4 });
});

afterAll(async () => {
  await producers.end();
});

const job = (key: string): EnqueueInput => ({ job_type: "order.job", tenant_id: "tenant_A", payload: { key }, idempotency_key: key });

describe("batch enqueues with overlapping keys in different orders", () => {
  it("never deadlock: both batches succeed and every key names one job", async () => {
    for (let round = 0; round < 4; round++) {
      // ASCII keys (sorted as JavaScript strings), then keys with multi-byte and astral characters
      // (sorted by their UTF-8 bytes: there code unit order and byte order differ).
      const mark = (i: number) => (round < 2 ? "k" : i % 3 === 0 ? "é" : i % 3 === 1 ? "\u{1F600}" : "\uFF21");
      const keys = Array.from({ length: 700 }, (_, i) => `r${round}-${mark(i)}-${(i * 7919) % 700}`);
      const reversed = [...keys].reverse();
      const shuffled = keys.filter((_, i) => i % 2 === 0).concat(keys.filter((_, i) => i % 2 === 1));
      const outcomes = await Promise.allSettled([
        enqueueJobs(producers, keys.map(job), { notify: false }),
        enqueueJobs(producers, reversed.map(job), { notify: false }),
        enqueueJobs(producers, shuffled.map(job), { notify: false }),
      ]);
      expect(outcomes.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
      const [a, b, c] = outcomes.map((o) => (o as PromiseFulfilledResult<Array<{ job_id: string }>>).value);
      // Each key maps to one job, whichever batch stored it; the others got that job back.
      const byKey = (batch: Array<{ job_id: string }>, order: string[]) => new Map(order.map((k, i) => [k, batch[i]!.job_id]));
      const fromA = byKey(a!, keys);
      const fromB = byKey(b!, reversed);
      const fromC = byKey(c!, shuffled);
      for (const k of keys) {
        expect(fromB.get(k)).toBe(fromA.get(k));
        expect(fromC.get(k)).toBe(fromA.get(k));
      }
    }
    const { rows } = await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM jobs`);
    expect(rows[0]!.n).toBe(String(4 * 700));
  });
});

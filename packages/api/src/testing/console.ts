import { randomUUID } from "node:crypto";
import { enqueueJobs, PolicyCache } from "@porter/core";
import { insertFinished } from "@porter/core/sql/finish";
import { type ControlDb, createPrisma } from "@porter/db/prisma";
import type pg from "pg";
import type { Context, Role, Session } from "../context";
import { createCaller } from "../root";

/** A console user for in-process calls. */
export const sessionOf = (role: Role, email = `${role}@example.com`): Session => ({ userId: `u-${email}`, email, role });

// One Prisma client per test pool (sharing its connections), as a process has one next to its pool.
const prismaOf = new WeakMap<pg.Pool, ControlDb>();
const prismaFor = (pool: pg.Pool): ControlDb => {
  let prisma = prismaOf.get(pool);
  if (!prisma) {
    prisma = createPrisma(pool);
    prismaOf.set(pool, prisma);
  }
  return prisma;
};

/**
 * A caller of the appRouter as a signed-in console user, with the headers of a same-origin JSON
 * request (what the console's own pages send), so procedures run as they do behind /api/trpc.
 */
export const consoleCaller = (pool: pg.Pool, session: Session | null) => {
  const ctx: Context = {
    req: new Request("http://console.test/api/trpc/x", {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://console.test", host: "console.test" },
    }),
    resHeaders: new Headers(),
    db: pool,
    prisma: prismaFor(pool),
    policyCache: new PolicyCache(),
    maxPayloadBytes: 64 * 1024,
    apiKey: null,
    session,
  };
  return createCaller(ctx);
};

/** Enqueues `n` jobs of `jobType` for `tenantId`; returns their ids in enqueue order. */
export const enqueueMany = async (pool: pg.Pool, n: number, opts: { jobType: string; tenantId: string; key?: string }): Promise<string[]> => {
  const results = await enqueueJobs(
    pool,
    Array.from({ length: n }, (_, i) => ({
      job_type: opts.jobType,
      tenant_id: opts.tenantId,
      payload: { ref: `r${i}` },
      idempotency_key: `${opts.key ?? randomUUID()}-${i}`,
    })),
    { notify: false },
  );
  return results.map((r) => r.job_id);
};

/**
 * Moves live jobs straight to a state, as fixtures (no worker): RETRY_WAIT (run in an hour, with a
 * last error), RUNNING (claimed by `fixture-worker`), or a terminal state (moved to finished_jobs;
 * DEAD with a structured error).
 */
export const moveJobs = async (pool: pg.Pool, jobIds: string[], state: "RETRY_WAIT" | "RUNNING" | "SUCCEEDED" | "DEAD" | "CANCELLED"): Promise<void> => {
  const error = `jsonb_build_object('code', 'E_FIXTURE', 'class', 'permanent', 'message', 'fixture failure', 'worker_version', null,
                                    'attempt', done.attempt, 'trace_id', done.trace_id, 'last_checkpoint', null)`;
  if (state === "RETRY_WAIT") {
    await pool.query(
      `UPDATE jobs SET state = 'RETRY_WAIT', attempt = 1, run_at = now() + interval '1 hour',
              last_error = jsonb_build_object('code', 'E_FLAKY', 'class', 'retryable', 'message', 'try later', 'worker_version', null,
                                              'attempt', 1, 'trace_id', trace_id, 'last_checkpoint', null)
        WHERE job_id = ANY($1::uuid[])`,
      [jobIds],
    );
  } else if (state === "RUNNING") {
    await pool.query(
      `UPDATE jobs SET state = 'RUNNING', attempt = attempt + 1, claimed_at = now(), lease_owner = 'fixture-worker',
              lease_token = nextval('lease_token_seq'), lease_until = now() + interval '1 minute', heartbeat_at = now()
        WHERE job_id = ANY($1::uuid[])`,
      [jobIds],
    );
  } else {
    await pool.query(
      `WITH done AS (DELETE FROM jobs WHERE job_id = ANY($1::uuid[]) RETURNING *)
       ${insertFinished({ state: `'${state}'`, finishedAt: "now()", error: state === "DEAD" ? error : "NULL", result: state === "SUCCEEDED" ? `'{"ok":true}'::jsonb` : "NULL", partial: "false" })}`,
      [jobIds],
    );
  }
};

/** Audit rows of an object, oldest first. */
export const auditOf = async (pool: pg.Pool, objectType: string, objectId: string) =>
  (
    await pool.query<{ actor: string; action: string; before: unknown; after: unknown; reason: string | null }>(
      `SELECT actor, action, before, after, reason FROM audit_log WHERE object_type = $1 AND object_id = $2 ORDER BY id`,
      [objectType, objectId],
    )
  ).rows;

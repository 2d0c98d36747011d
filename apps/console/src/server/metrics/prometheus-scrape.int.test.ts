import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { claimJobs, completeJobs, enqueueJobs, failJobs } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { checkMetrics, type PrometheusServer, queryUntil, startPrometheus } from "@porter/core/testing/prometheus";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The console's /api/metrics checked by real Prometheus tooling (Debian's `prometheus` package):
// `promtool check metrics` on its exposition text, and a Prometheus server scraping it once. The
// route handler itself (auth, registry, reads as the runtime role) is served by a plain node:http
// adapter instead of `next start`, which would need a production build.
// biome-ignore lint/correctness/useHookAtTopLevel: not a React hook; vitest's per-file database (beforeAll/afterAll inside)
const db = useTestDatabase({ label: "prometheus-scrape" });
const TOKEN = "scrape-token-0123456789abcdef";
let server: Server | undefined;
let prometheus: PrometheusServer | undefined;
let base = "";

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "mp", queues: [{ id: "mq" }, { id: "mr" }], tenants: ["tenant_A", "tenant_B", "tenant_C"] });
  // Finished work on mr (before mq has jobs, so the claim takes only mr's): 2 succeed, 1 retries with BOOM.
  await enqueueJobs(
    db.pool,
    [0, 1, 2].map((i) => ({ job_type: "mr.job", tenant_id: "tenant_A", payload: { i }, idempotency_key: `r${i}` })),
    { notify: false },
  );
  const [a, b, c] = await claimJobs(db.pool, { poolId: "mp", workerId: "w1", limit: 3 });
  await completeJobs(
    db.pool,
    [a!, b!].map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
  );
  await failJobs(db.pool, [
    {
      id: c!.id,
      leaseToken: c!.leaseToken,
      attempt: c!.attempt,
      outcome: "failed",
      error: {
        code: "BOOM",
        class: "retryable",
        message: "boom",
        worker_version: "test",
        attempt: 1,
        trace_id: "0af7651916cd43dd8448eb211c80319c",
        last_checkpoint: null,
      },
      next: { state: "RETRY_WAIT", runAt: new Date(Date.now() + 3_600_000) },
    },
  ]);
  await enqueueJobs(
    db.pool,
    ["tenant_A", "tenant_A", "tenant_B", "tenant_C"].map((tenant_id, i) => ({ job_type: "mq.job", tenant_id, payload: { i }, idempotency_key: `m${i}` })),
    { notify: false },
  );
  Object.assign(process.env, {
    PORTER_APP_DATABASE_URL: db.appConnectionString,
    AUTH_SECRET: "a-test-secret-of-enough-length",
    HOST: "127.0.0.1",
    PORTER_METRICS_TOKEN: TOKEN,
    PORTER_METRICS_TOP_TENANTS: "1",
  });
  const { GET } = await import("../../app/api/metrics/route");
  server = createServer((req, res) => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    void GET(new Request(`http://127.0.0.1${req.url ?? "/"}`, { headers })).then(async (response) => {
      res.writeHead(response.status, Object.fromEntries(response.headers)).end(await response.text());
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  base = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await prometheus?.stop();
  await new Promise((resolve) => server?.close(resolve));
  const { getPool } = await import("../db");
  await getPool().end();
});

const scrape = async (token = TOKEN) => fetch(`http://${base}/api/metrics`, { headers: { authorization: `Bearer ${token}` } });

describe("/api/metrics with Prometheus tooling", () => {
  it("refuses a wrong token, and promtool accepts the exposition text", async () => {
    expect((await scrape("wrong-token-0123456789")).status).toBe(401);
    const response = await scrape();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    const check = checkMetrics(text);
    // Parses (1 would be a format error); lint problems only in prom-client's own default gauges.
    expect(check.problems).toEqual([]);
    expect([0, 3]).toContain(check.status);
    expect(text).toMatch(/^porter_up 1$/m);
    expect(text).toContain('porter_jobs{queue="mq",state="READY"} 4');
    // Top 1 tenant by live jobs keeps its id; the others are "other".
    expect(text).toContain('porter_tenant_jobs{tenant="tenant_A",state="READY"} 2');
    expect(text).toContain('porter_tenant_jobs{tenant="other",state="READY"} 2');
    expect(text).toMatch(/^porter_oldest_ready_seconds\{queue="mq"\} \d/m);
    expect(text).toContain('porter_oldest_ready_seconds{queue="mr"} 0');
    expect(text).toContain('porter_dead_jobs{queue="mq"} 0');
    expect(text).toContain('porter_workers{pool="mp",state="live"} 0');
    expect(text).toMatch(/^porter_console_process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^porter_console_nodejs_eventloop_lag_seconds \d/m);
    // The rollup-backed counters, histograms and signal gauges.
    expect(text).toMatch(/^# TYPE porter_jobs_completed_total counter$/m);
    expect(text).toContain('porter_jobs_completed_total{queue="mr",job_type="mr.job",outcome="succeeded"} 2');
    expect(text).toContain('porter_jobs_completed_total{queue="mr",job_type="mr.job",outcome="dead"} 0');
    expect(text).toContain('porter_job_retries_total{queue="mr",code="BOOM"} 1');
    expect(text).toContain('porter_lease_expiries_total{queue="mr"} 0');
    expect(text).toContain('porter_backlog_seconds{queue="mr"} 0');
    expect(text).toMatch(/^porter_pool_desired_workers\{pool="mp"\} \d+$/m);
    for (const [name, count] of [
      ["porter_job_wait_seconds", 3],
      ["porter_job_run_seconds", 3],
    ] as const) {
      expect(text).toMatch(new RegExp(`^# TYPE ${name} histogram$`, "m"));
      const buckets = [...text.matchAll(new RegExp(`^${name}_bucket\\{queue="mr",le="([^"]+)"\\} (\\d+)$`, "gm"))].map((m) => [m[1]!, Number(m[2])] as const);
      expect(buckets).toHaveLength(29);
      expect(buckets.at(-1)).toEqual(["+Inf", count]);
      expect(buckets[0]![0]).toBe("0.001");
      // Cumulative: never decreasing with le, le ascending.
      for (let i = 1; i < buckets.length; i++) expect(buckets[i]![1]).toBeGreaterThanOrEqual(buckets[i - 1]![1]);
      for (let i = 1; i < buckets.length - 1; i++) expect(Number(buckets[i]![0])).toBeGreaterThan(Number(buckets[i - 1]![0]));
      expect(text).toContain(`${name}_count{queue="mr"} ${count}`);
      expect(text).toMatch(new RegExp(`^${name}_sum\\{queue="mr"\\} [0-9.e-]+$`, "m"));
    }
  });

  it("with the database unreachable: porter_up 0, the database's metrics absent, the process metrics still there", async () => {
    const { ConsoleMetrics } = await import("./console-metrics");
    const unreachable = createPool("postgres://porter_app@127.0.0.1:1/none", { max: 1, connectionTimeoutMillis: 1000 });
    const failed: string[] = [];
    try {
      const metrics = new ConsoleMetrics({ db: unreachable, topTenants: 20, onReadError: (metric) => failed.push(metric) });
      const { body } = await metrics.render();
      expect(body).toMatch(/^porter_up 0$/m);
      expect(body).not.toMatch(/^porter_jobs\{/m);
      expect(body).toMatch(/^porter_console_process_cpu_seconds_total \d/m);
      expect(failed).toContain("porter_jobs");
      expect(checkMetrics(body).problems).toEqual([]);
    } finally {
      await unreachable.end();
    }
  });

  it("a Prometheus server scrapes it: porter_up = 1 through the query API", async () => {
    prometheus = await startPrometheus({ target: base, metricsPath: "/api/metrics", bearerToken: TOKEN });
    const up = await queryUntil(prometheus, "porter_up", (result) => result.length > 0);
    expect(up[0]!.value[1]).toBe("1");
    const jobs = await queryUntil(prometheus, 'porter_jobs{queue="mq",state="READY"}', (result) => result.length > 0);
    expect(jobs[0]!.value[1]).toBe("4");
    const completed = await queryUntil(prometheus, 'porter_jobs_completed_total{queue="mr",outcome="succeeded"}', (result) => result.length > 0);
    expect(completed[0]!.value[1]).toBe("2");
    const count = await queryUntil(prometheus, 'porter_job_wait_seconds_count{queue="mr"}', (result) => result.length > 0);
    expect(count[0]!.value[1]).toBe("3");
    const p50 = await queryUntil(prometheus, 'histogram_quantile(0.5, porter_job_run_seconds_bucket{queue="mr"})', (result) => result.length > 0);
    expect(Number(p50[0]!.value[1])).toBeGreaterThanOrEqual(0);
    const names = await (await fetch(`${prometheus.url}/api/v1/label/__name__/values`)).json();
    expect(names.data).toEqual(
      expect.arrayContaining([
        "porter_jobs_completed_total",
        "porter_job_retries_total",
        "porter_lease_expiries_total",
        "porter_job_wait_seconds_bucket",
        "porter_job_run_seconds_sum",
        "porter_backlog_seconds",
        "porter_pool_desired_workers",
      ]),
    );
    await prometheus.stop();
    expect(prometheus.child.exitCode !== null || prometheus.child.signalCode !== null).toBe(true);
  }, 60_000);
});

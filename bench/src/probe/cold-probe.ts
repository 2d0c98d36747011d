import pg from "pg";
import { claimBatch, enqueueJobs } from "@porter/core";
const url = "postgres://postgres@127.0.0.1:5432/probe_cold";
const t = () => performance.now();
for (let conn = 0; conn < 3; conn++) {
  const c = new pg.Client(url); await c.connect();
  const times: number[] = [];
  for (let i = 0; i < 12; i++) {
    const s = t();
    await claimBatch(c as any, { poolId: "p", workerId: "00000000-0000-0000-0000-000000000000", limit: 24 });
    times.push(Math.round((t() - s) * 10) / 10);
  }
  console.log("empty claim ms per execution, conn", conn, times.join(" "));
  await c.end();
}

import { createPool } from "@porter/db/pool";
import { ReadReplica } from "@porter/db/read-replica";
import { readReplicaUrl, runtimeDatabaseUrl } from "@porter/db/runtime-role";
import { type ReplicaCluster, startStreamingReplica } from "@porter/db/testing/replica-cluster";
import { type RestartableCluster, startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import type pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ConsoleMetrics } from "./console-metrics";

// The read replica's gauges in /api/metrics (docs/scaling.md "Replica reads"), against a real hot
// standby of a cluster of this file's own (pg_basebackup -R; as root the binaries run as the
// postgres OS user): up and caught up, then stopped.

let primary: RestartableCluster;
let replica: ReplicaCluster;
let app: pg.Pool;
let appReplica: pg.Pool;

beforeAll(async () => {
  primary = await startRestartableCluster({ isMigrated: true });
  replica = await startStreamingReplica(primary);
  const runtimeUrl = runtimeDatabaseUrl({ databaseUrl: primary.connectionString });
  app = createPool(runtimeUrl, { max: 3 });
  appReplica = createPool(readReplicaUrl(replica.connectionString, runtimeUrl), { max: 3, connectionTimeoutMillis: 1000, onError: () => {} });
}, 180_000);

afterAll(async () => {
  await app?.end();
  await appReplica?.end();
  await replica?.stop();
  await primary?.stop();
});

it("porter_read_replica_up and _lag_seconds: 1 and 0 for a caught-up standby, 0 and NaN once it is stopped; absent without a replica", async () => {
  // Probes only when the test asks (refresh()): render() reads the last one.
  const router = new ReadReplica({ primary: app, replica: appReplica, refreshMs: 60_000 });
  const metrics = new ConsoleMetrics({ db: app, topTenants: 0, replica: router });
  for (let i = 0; (await router.refresh()).lagS !== 0; i++) {
    if (i > 100) throw new Error(`the standby did not catch up: ${JSON.stringify(await router.status())}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const up = (await metrics.render()).body;
  expect(up).toMatch(/^porter_read_replica_up 1$/m);
  expect(up).toMatch(/^porter_read_replica_lag_seconds 0$/m);

  await replica.stopServer();
  await router.refresh();
  const down = (await metrics.render()).body;
  expect(down).toMatch(/^porter_read_replica_up 0$/m);
  expect(down).toMatch(/^porter_read_replica_lag_seconds nan$/im); // prom-client writes "Nan"; Prometheus parses NaN case-insensitively
  expect(down).toMatch(/^porter_up 1$/m); // the primary's reads are unaffected

  const without = (await new ConsoleMetrics({ db: app, topTenants: 0 }).render()).body;
  expect(without).not.toMatch(/porter_read_replica/);
});

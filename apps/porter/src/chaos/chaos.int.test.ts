// The short form of the chaos suite (issue 9), part of `npm test`: the same run as `npm run chaos`
// at a smaller scale (~22 s of chaos). It asserts invariants only — nothing lost, duplicated, left
// running or unrecorded, no worker exit the suite did not cause — never timings. It runs against a
// PostgreSQL cluster of its own (restartable-cluster.ts), not the shared test server, because it
// restarts it. It prints the table; a failed run keeps the logs under .porter/chaos/test-<seed>/;
// replay with `npm run chaos -- --short --seed <seed>`.
import { randomInt } from "node:crypto";
import { rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SHORT_CHAOS } from "./profiles";
import { runChaos } from "./run-chaos";

const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

describe("chaos (short form)", () => {
  it("SIGKILLed workers, terminated LISTEN connections and immediate PostgreSQL restarts lose, duplicate and leave nothing unrecorded", {
    timeout: 150_000,
  }, async () => {
    const seed = randomInt(1, 2 ** 31);
    const logDir = `${REPO_ROOT}.porter/chaos/test-${seed}`;
    const report = await runChaos({ ...SHORT_CHAOS(), seed, logDir });
    process.stdout.write(`\n${report.table}\n`);
    if (report.isOk) await rm(logDir, { recursive: true, force: true });
    expect(
      report.checks.filter((c) => !c.isOk).map((c) => `${c.name}: expected ${c.expected}, observed ${c.observed}`),
      report.table,
    ).toEqual([]);
    // The run did what it claims: the faults happened.
    expect(report.actions.restarts.length).toBe(1);
    expect(report.actions.crashCase.commits).toBeGreaterThan(0);
    expect(report.actions.kills.length).toBeGreaterThan(0);
    expect(report.actions.listenKills.length).toBeGreaterThan(0);
  });
});

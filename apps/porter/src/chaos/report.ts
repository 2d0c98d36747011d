// The chaos run's table: what was done, then one row per invariant (expected, observed), then
// the evidence of every failed row.
import type { Check } from "./invariants";
import type { ChaosActions } from "./run-chaos";

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Renders the report as plain text (a Markdown table, readable in a terminal and in a PR). */
export const formatReport = (checks: Check[], a: ChaosActions): string => {
  const kinds = a.acknowledgedByKind;
  const acknowledged = kinds.effect + kinds.sleep + kinds.transient + kinds.permanent;
  const done: Array<[string, string]> = [
    ["duration", `${s(a.chaosMs)} of chaos + ${s(a.settleMs)} to settle (${s(a.totalMs)} in all, cluster and fleet start included)`],
    ["fleet", `${a.workers} worker processes × concurrency ${a.concurrency}; ${a.workersStarted} started in all`],
    ["SIGKILLs", `${a.kills.length} (${a.kills.map((k) => `w${k.member.index}`).join(" ") || "none"}), each replaced at once`],
    [
      "PostgreSQL restarts mid-run",
      `${a.restarts.length} × pg_ctl restart -m immediate (accepting again after ${a.restarts.map((r) => s(r.ms)).join(", ") || "-"})`,
    ],
    [
      "transactional-enqueue crash case",
      `${a.crashCase.commits} producer transactions committed (${a.crashCase.commitsInLastSecond} in the last second), then an immediate restart on the quiet server (back after ${s(a.crashCase.ms)})`,
    ],
    ["LISTEN connections terminated", `${a.listenKills.length} (${a.listenKills.map((k) => `w${k.member?.index ?? "?"}`).join(" ") || "none"})`],
    [
      "jobs acknowledged",
      `${acknowledged}: ${kinds.effect} diag.effect (a third each by default, through txOnly and as one statement), ${kinds.sleep} diag.sleep, ${kinds.transient} transient + ${kinds.permanent} permanent diag.fail; ${a.jobsTotal} jobs in the database in all`,
    ],
    ["enqueue calls refused (server down)", String(a.failedEnqueueCalls)],
    [
      "transactional commits",
      `${a.transactionalCommits} acknowledged (${a.restarts.map((r) => r.commitsInLastSecond).join(", ")} in the last second before the mid-run restart), ${a.failedTransactions} failed`,
    ],
    ["seed", String(a.seed)],
  ];
  const lines = [
    "## What was done",
    "",
    ...table(["", ""], done),
    "",
    "## Invariants",
    "",
    ...table(
      ["invariant", "expected", "observed", ""],
      checks.map((c) => [c.name, c.expected, c.observed, c.isOk ? "ok" : "FAIL"]),
    ),
  ];
  const failed = checks.filter((c) => !c.isOk);
  if (failed.length > 0) {
    lines.push("", "## Evidence");
    for (const c of failed) lines.push("", `${c.name}:`, ...c.evidence.map((e) => `  - ${e}`));
  }
  lines.push("", failed.length === 0 ? "chaos: PASS" : `chaos: FAIL (${failed.length} of ${checks.length} invariants)`);
  return lines.join("\n");
};

const table = (header: string[], rows: string[][]): string[] => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)];
};

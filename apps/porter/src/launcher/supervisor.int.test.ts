import { spawn } from "node:child_process";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../cli/paths";
import { type ChildSpec, Supervisor } from "./supervisor";

// Real processes: the launcher's promises about process groups, restarts and orphans.
const guard = pathToFileURL(join(repoRoot(), "apps/porter/src/launcher/parent-guard.mjs")).href;
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const waitUntil = async (predicate: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (predicate()) return true;
    await sleep(50);
  }
  return predicate();
};
const nodeChild = (name: string, script: string, restart = false): ChildSpec => ({
  name,
  command: process.execPath,
  args: ["-e", script],
  cwd: repoRoot(),
  env: process.env,
  restart,
});
const collect = () => {
  const lines: string[] = [];
  const notes: string[] = [];
  const supervisor = new Supervisor({
    output: (name, line) => lines.push(`${name}: ${line}`),
    log: (message) => notes.push(message),
    backoff: { baseMs: 50, capMs: 200, stableMs: 60_000 },
  });
  return { supervisor, lines, notes };
};

describe("Supervisor", () => {
  it("[START]: stop() sends SIGTERM to each child's process group, grandchildren included", async () => {
    const { supervisor, lines } = collect();
    // The child starts a grandchild in its group, then stops gracefully on SIGTERM.
    const child = supervisor.start(
      nodeChild(
        "parent",
        // The handler is installed before the line the test waits for: a SIGTERM right after it
        // must find it (installed after, a fast stop killed the child before it could say bye).
        `const { spawn } = require("node:child_process");
         process.on("SIGTERM", () => { console.log("bye"); process.exit(0); });
         const g = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
         console.log("grandchild " + g.pid);
         setInterval(() => {}, 1000);`,
      ),
    );
    expect(await waitUntil(() => lines.some((l) => l.startsWith("parent: grandchild ")), 10_000)).toBe(true);
    const grandchild = Number(
      lines
        .find((l) => l.startsWith("parent: grandchild "))!
        .split(" ")
        .pop(),
    );
    const pid = child.pid!;
    expect(isAlive(grandchild)).toBe(true);
    await supervisor.stop({ timeoutMs: 5_000 });
    expect(lines).toContain("parent: bye");
    expect(isAlive(pid)).toBe(false);
    expect(await waitUntil(() => !isAlive(grandchild), 5_000)).toBe(true);
  });

  it("[STOP]: a child that ignores SIGTERM is killed after the timeout", async () => {
    const { supervisor, lines, notes } = collect();
    const child = supervisor.start(
      nodeChild("stubborn", `process.on("SIGTERM", () => console.log("ignored")); setInterval(() => {}, 1000); console.log("up");`),
    );
    expect(await waitUntil(() => lines.includes("stubborn: up"), 10_000)).toBe(true);
    const pid = child.pid!;
    const started = Date.now();
    await supervisor.stop({ timeoutMs: 500 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(lines).toContain("stubborn: ignored");
    expect(notes.some((n) => n.includes("stubborn did not stop"))).toBe(true);
    expect(isAlive(pid)).toBe(false);
  });

  it("[RESTART]: a crashing child is restarted with growing backoff and reported; others are not", async () => {
    const { supervisor, notes } = collect();
    const exits: number[] = [];
    const crashing = supervisor.start(nodeChild("crasher", "process.exit(3)", true));
    const once = new Supervisor({ output: () => {}, log: () => {}, onExit: (_c, exit) => exits.push(exit.code ?? -1) });
    once.start(nodeChild("one-shot", "process.exit(4)"));
    expect(await waitUntil(() => notes.filter((n) => n.startsWith("crasher exited unexpectedly (code 3)")).length >= 3, 15_000)).toBe(true);
    const delays = notes.filter((n) => n.startsWith("crasher")).map((n) => Number(/restarting in ([\d.]+) s/.exec(n)?.[1]));
    expect(delays.slice(0, 3)).toEqual([0.1, 0.1, 0.2]);
    expect(await waitUntil(() => exits.length === 1, 10_000)).toBe(true);
    expect(exits).toEqual([4]);
    await supervisor.stop({ timeoutMs: 2_000 });
    const count = notes.length;
    await sleep(500);
    expect(notes.length).toBe(count);
    expect(crashing.pid).toBeUndefined();
  });

  it("[ORPHANS]: children stop gracefully when the launcher is SIGKILLed", async () => {
    const launcher = spawn(process.execPath, ["--import", "tsx", join(repoRoot(), "apps/porter/src/launcher/testing/fake-launcher.ts"), guard], {
      cwd: repoRoot(),
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    launcher.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    expect(await waitUntil(() => /CHILD \d+/.test(output), 20_000)).toBe(true);
    const child = Number(/CHILD (\d+)/.exec(output)![1]);
    expect(isAlive(child)).toBe(true);
    launcher.kill("SIGKILL");
    // The child's stdin pipe closes with the launcher; parent-guard turns that into SIGTERM.
    const isGone = await waitUntil(() => !isAlive(child), 10_000);
    if (!isGone) process.kill(child, "SIGKILL"); // do not leave it behind when the test fails
    expect(isGone).toBe(true);
  });
});

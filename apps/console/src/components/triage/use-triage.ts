"use client";
import type { TDlqStatus, TGroupDetail, TJobTriage } from "@porter/api/schemas/dlq";
import { type RouterInputs, useTRPC } from "../../lib/trpc";
import { statusLabel } from "../dlq";
import { useAction } from "../use-action";

/**
 * What the shared triage panel and thread work on: a failure group (dlq.groups.triage) or a
 * single dead job's own triage (dlq.jobs.triage). Same fields, same look; only the call differs.
 */
export type TriageTarget = { kind: "group"; group: TGroupDetail } | { kind: "job"; job: TJobTriage };

/** A triage change: what the two procedures share (ignore is a group's only). */
export type TriageChange = Omit<RouterInputs["dlq"]["groups"]["triage"], "id">;

/** The fields the panel shows, whichever the target. */
export const triageView = (target: TriageTarget) => {
  const t = target.kind === "group" ? target.group : target.job;
  return {
    owner: t.owner,
    status: t.status as TDlqStatus,
    reason_code: t.reason_code,
    events: t.events,
    ignored_until: target.kind === "group" ? target.group.ignored_until : null,
    ignore_remaining: target.kind === "group" ? target.group.ignore_remaining : null,
    /** "Group 12" / "Job …a1b2c3": for flash messages. */
    name: target.kind === "group" ? `Group ${target.group.id}` : `Job ${target.job.job_id.slice(-12)}`,
    /** "group" / "job": for labels ("Triage this job"). */
    noun: target.kind,
  };
};

/** Runs a triage change on the target; both mutations are set up (hooks), the target's is used. */
export function useTriage(target: TriageTarget, options: { success?: () => string; onDone?: () => void } = {}) {
  const trpc = useTRPC();
  const name = triageView(target).name;
  const describe = (t: { owner: { email: string } | null; status: TDlqStatus; reason_code: string | null }) =>
    `${name}: ${t.owner ? `owned by ${t.owner.email}` : "unowned"}, ${statusLabel(t.status)}${t.reason_code ? `, reason ${t.reason_code}` : ""}.`;
  // A job's page also shows the triage on its timeline (jobs.get): refreshed with it.
  const common = { refreshes: target.kind === "job" ? [trpc.dlq, trpc.jobs] : [trpc.dlq], ...(options.onDone ? { onDone: options.onDone } : {}) };
  const group = useAction(trpc.dlq.groups.triage.mutationOptions(), { ...common, success: (g) => options.success?.() ?? describe(g) });
  const job = useAction(trpc.dlq.jobs.triage.mutationOptions(), { ...common, success: (j) => options.success?.() ?? describe(j) });
  const runAsync = async (change: TriageChange): Promise<void> => {
    if (target.kind === "group") await group.runAsync({ id: target.group.id, ...change });
    else {
      const { ignore: _ignore, ...rest } = change;
      await job.runAsync({ job_id: target.job.job_id, ...rest });
    }
  };
  return { runAsync, isPending: group.isPending || job.isPending };
}

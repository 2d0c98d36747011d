import { createTRPCRouter } from "../../trpc";
import { alertsRouter, webhookRouter } from "./alerts";
import { dlqJobsRouter, groupsRouter, reasonCodesRouter } from "./groups";
import { redrivesRouter } from "./redrives";

/**
 * The dead-letter triage workflow (issue 12), `dlq.*`: failure groups and their triage, a dead
 * job's own triage, reason codes; redrives, alerts and the alert webhook in their own files.
 * Procedures and roles: packages/api/src/schemas/dlq.ts.
 */
export const dlqRouter = createTRPCRouter({
  groups: groupsRouter,
  jobs: dlqJobsRouter,
  reasonCodes: reasonCodesRouter,
  redrives: redrivesRouter,
  alerts: alertsRouter,
  webhook: webhookRouter,
});

import { createTRPCRouter } from "../../trpc";
import { alertsRouter, webhookRouter } from "./alerts";

/** The dead-letter queue workflow (issue 12): packages/api/src/schemas/dlq.ts is the contract. */
export const dlqRouter = createTRPCRouter({ alerts: alertsRouter, webhook: webhookRouter });

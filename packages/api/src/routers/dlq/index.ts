import { createTRPCRouter } from "../../trpc";
import { redrivesRouter } from "./redrives";

/** The dead-letter triage workflow (issue 12); procedures and roles in schemas/dlq.ts. */
export const dlqRouter = createTRPCRouter({ redrives: redrivesRouter });

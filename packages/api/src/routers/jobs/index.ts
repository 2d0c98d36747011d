import { createTRPCRouter } from "../../trpc";
import { cancel, redrive, retry } from "./actions";
import { counts, errorCodes, get, list } from "./read";

/** The jobs browser: list/counts/get/errorCodes (viewer); bulk cancel, retry, redrive with a dry run (operator). */
export const jobsRouter = createTRPCRouter({ list, counts, get, errorCodes, cancel, retry, redrive });

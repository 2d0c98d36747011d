import type { SafeFailure } from "@porter/contracts";

/**
 * The tenant-safe failure of a finished job's error, as a webhook's `data.failure` carries it:
 * core's `safeFailure(error)` (reads/safe-failure.ts, written in parallel by the status work).
 * Until that lands this returns null — never the raw error. The one place to wire it.
 */
// TODO(lead): `return error ? safeFailure(error) : null;` once reads/safe-failure.ts is merged.
export const tenantFailure = (_error: unknown): SafeFailure | null => null;

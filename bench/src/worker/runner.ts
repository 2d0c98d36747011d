/** A system's worker as the worker process runs it. `info` shows the settings in effect (filled as they become known). */
export type RunningWorker = { info: Record<string, unknown>; stop: () => Promise<void> };

/**
 * The arguments of one `npm start` worker (`node … worker.mjs`, the bundle of bin/worker.ts that
 * bundles.ts builds): its pool, the user's handler module when set, and its Prometheus endpoint
 * (`--metrics-port`) when `metricsPort` is set.
 */
export const workerStartArgs = (options: {
  preload: string[];
  workerScript: string;
  poolId: string;
  handlersModule?: string;
  metricsPort?: number;
}): string[] => [
  ...options.preload,
  options.workerScript,
  "--pool",
  options.poolId,
  ...(options.handlersModule ? ["--handlers", options.handlersModule, "--skip-other-pools"] : []),
  ...(options.metricsPort ? ["--metrics-port", String(options.metricsPort)] : []),
];

/**
 * The metrics port of each pool's worker: `first` + the pool's index (one worker per pool, each
 * its own port); none when `first` is 0 (PORTER_WORKER_METRICS_PORT=0 or off). Throws when the
 * range would pass 65535.
 */
export const workerMetricsPorts = (first: number, pools: readonly string[]): Map<string, number> => {
  if (first === 0) return new Map();
  if (first + pools.length - 1 > 65_535)
    throw new Error(`PORTER_WORKER_METRICS_PORT=${first}: ${pools.length} workers need ports up to ${first + pools.length - 1} (> 65535)`);
  return new Map(pools.map((pool, i) => [pool, first + i]));
};

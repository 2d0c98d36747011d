/** The label of every tenant outside the top N. */
export const OTHER_TENANT = "other";

/**
 * Bounded tenant labels: the `n` tenants with the most volume keep their id, everyone else is
 * `other` (ties broken by id, so the set is stable between scrapes). Returns the label of each
 * tenant. A tenant actually named "other" is labelled "other" too.
 */
export const tenantLabeller = (volumeByTenant: ReadonlyMap<string, number>, n: number): ((tenantId: string) => string) => {
  const top = new Set(
    [...volumeByTenant]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .slice(0, Math.max(0, n))
      .map(([id]) => id),
  );
  return (tenantId) => (top.has(tenantId) ? tenantId : OTHER_TENANT);
};

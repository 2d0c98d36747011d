import type { Budget, Variant } from "../variants";
import { openGraphile } from "./graphile";
import { openPgBoss } from "./pgboss";
import { openPorter } from "./porter";
import type { Session } from "./types";

/** A fresh database with `variant`'s system installed, seen from the producer side. */
export const openSession = (adminUrl: string, variant: Variant, budget: Budget): Promise<Session> => {
  switch (variant.system) {
    case "porter":
      return openPorter(adminUrl, variant, budget);
    case "graphile":
      return openGraphile(adminUrl, variant, budget);
    case "pgboss":
      return openPgBoss(adminUrl, variant, budget);
  }
};

import type { Session } from "./context";

/** The audit `actor` of a console user: `user:<email>`. */
export const actorOf = (session: Session): string => `user:${session.email}`;

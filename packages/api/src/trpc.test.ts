import { PolicyCache } from "@porter/core";
import type { TRPCError } from "@trpc/server";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import type { Context, Session } from "./context";
import { adminProcedure, createTRPCRouter, operatorProcedure, viewerProcedure } from "./trpc";

const router = createTRPCRouter({
  viewer: viewerProcedure.query(({ ctx }) => ctx.session.role),
  operator: operatorProcedure.query(({ ctx }) => ctx.session.role),
  admin: adminProcedure.query(({ ctx }) => ctx.session.role),
});
const caller = (session: Session | null) =>
  router.createCaller({
    req: new Request("http://test/api/trpc"),
    resHeaders: new Headers(),
    db: null as unknown as pg.Pool, // role checks never reach the database
    prisma: null as unknown as Context["prisma"],
    policyCache: new PolicyCache(),
    maxPayloadBytes: 1024,
    apiKey: null,
    session,
  } satisfies Context);

const codeOf = async (call: Promise<unknown>) => {
  try {
    await call;
    return "OK";
  } catch (error) {
    return (error as TRPCError).code;
  }
};
const as = (role: Session["role"]): Session => ({ userId: "u1", email: "u@example.com", role });

describe("console role procedures", () => {
  it("deny every caller without a session (no sign-in yet): 401", async () => {
    expect(await codeOf(caller(null).viewer())).toBe("UNAUTHORIZED");
    expect(await codeOf(caller(null).operator())).toBe("UNAUTHORIZED");
    expect(await codeOf(caller(null).admin())).toBe("UNAUTHORIZED");
  });

  it("rank viewer < operator < admin: 403 below the required role", async () => {
    expect(await codeOf(caller(as("viewer")).viewer())).toBe("OK");
    expect(await codeOf(caller(as("viewer")).operator())).toBe("FORBIDDEN");
    expect(await codeOf(caller(as("operator")).operator())).toBe("OK");
    expect(await codeOf(caller(as("operator")).admin())).toBe("FORBIDDEN");
    expect(await codeOf(caller(as("admin")).viewer())).toBe("OK");
    expect(await codeOf(caller(as("admin")).admin())).toBe("OK");
  });
});

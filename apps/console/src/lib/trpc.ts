"use client";
import type { AppRouter } from "@porter/api";
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import { createTRPCContext } from "@trpc/tanstack-react-query";

/** `useTRPC()` gives typed query/mutation options for every procedure of @porter/api. */
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

/** What each procedure returns, e.g. `RouterOutputs["queues"]["list"][number]`: views never redeclare a row's shape. */
export type RouterOutputs = inferRouterOutputs<AppRouter>;
/** What each procedure takes, e.g. `RouterInputs["audit"]["list"]["filter"]`. */
export type RouterInputs = inferRouterInputs<AppRouter>;

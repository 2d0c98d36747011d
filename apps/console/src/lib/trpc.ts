"use client";
import type { AppRouter } from "@porter/api";
import { createTRPCContext } from "@trpc/tanstack-react-query";

/** `useTRPC()` gives typed query/mutation options for every procedure of @porter/api. */
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

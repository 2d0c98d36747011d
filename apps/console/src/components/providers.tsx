"use client";
import type { AppRouter, Role } from "@porter/api";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import { createContext, type ReactNode, useContext, useState } from "react";
import { TRPCProvider } from "../lib/trpc";
import { ConfirmHost } from "./confirm-action";
import { FlashProvider } from "./flash";

/** The signed-in user, as the server layout read it. */
export type Viewer = { email: string; name: string; role: Role };

const ViewerContext = createContext<Viewer | null>(null);

/** Roles in order of what they may do: each may do everything the ones below it may. */
export const ROLE_RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** The signed-in user and `can(role)`: whether they hold at least that role (buttons hide otherwise). */
export const useViewer = () => {
  const viewer = useContext(ViewerContext);
  if (!viewer) throw new Error("useViewer outside <Providers>");
  return { ...viewer, can: (role: Role) => ROLE_RANK[viewer.role] >= ROLE_RANK[role] };
};

const makeQueryClient = () =>
  new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 2_000,
        // 4xx will not get better by asking again; a 5xx or a network error may.
        retry: (count, error) => {
          const status = error instanceof TRPCClientError ? (error.data as { httpStatus?: number } | undefined)?.httpStatus : undefined;
          return count < 2 && (status === undefined || status >= 500);
        },
      },
    },
  });

/**
 * React Query + tRPC client (plain JSON, batched, same-origin cookies), the signed-in user, and the
 * flash message and confirmation dialog every action shares (`useAction`).
 */
export function Providers({ viewer, children }: { viewer: Viewer; children: ReactNode }) {
  const [queryClient] = useState(makeQueryClient);
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [httpBatchLink({ url: "/api/trpc", maxItems: 20 })],
    }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <ViewerContext.Provider value={viewer}>
          <FlashProvider>
            <ConfirmHost>{children}</ConfirmHost>
          </FlashProvider>
        </ViewerContext.Provider>
      </TRPCProvider>
    </QueryClientProvider>
  );
}

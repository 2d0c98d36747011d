"use client";
import { type QueryKey, type UseMutationOptions, useMutation, useQueryClient } from "@tanstack/react-query";
import { type Confirmation, type ConfirmValues, useConfirm } from "./confirm-action";
import { useFlash } from "./flash";
import { errorMessage } from "./states";

/** The tRPC routers (`trpc.queues`) whose every query is refreshed after an action. */
export type Refreshes = ReadonlyArray<{ pathKey: () => QueryKey }>;

/**
 * One console action — a mutation of @porter/api — with everything around it: the confirmation
 * dialog (reason for the audit log, optional dry run), the pending state, the refresh of what it
 * changed and the flash message saying how it went.
 *
 *     const pause = useAction(trpc.queues.pause.mutationOptions(), {
 *       refreshes: [trpc.queues, trpc.overview],
 *       success: (r) => `Paused queue ${r.id}.`,
 *     });
 *     pause.confirm({ title, summary, confirmLabel, input: ({ reason }) => ({ id, reason }) });
 *
 * - `confirm(spec)` opens the dialog; the action runs when the user confirms (a refusal stays in
 *   the dialog). `spec.input` builds the procedure's input from what the user chose.
 * - `run(input)` acts at once (resume); a refusal is flashed.
 * - `runAsync(input)` acts at once and throws a refusal to the caller (forms show it by field).
 */
export function useAction<TOutput, TError, TInput, TContext>(
  mutation: UseMutationOptions<TOutput, TError, TInput, TContext>,
  {
    refreshes,
    success,
    onDone,
  }: {
    refreshes: Refreshes;
    /** The flash message once it worked. */
    success: (result: TOutput, input: TInput) => string;
    /** After the refreshes, e.g. clear a selection. */
    onDone?: (result: TOutput, input: TInput) => void;
  },
) {
  const { mutateAsync, isPending } = useMutation(mutation);
  const queryClient = useQueryClient();
  const flash = useFlash();
  const confirmWith = useConfirm();

  const runAsync = async (input: TInput): Promise<TOutput> => {
    const result = await mutateAsync(input);
    await Promise.all(refreshes.map((router) => queryClient.invalidateQueries({ queryKey: router.pathKey() })));
    flash.show({ tone: "ok", text: success(result, input) });
    onDone?.(result, input);
    return result;
  };

  const run = (input: TInput): void => {
    flash.show(null);
    runAsync(input).catch((error: unknown) => flash.show({ tone: "bad", text: errorMessage(error) }));
  };

  const confirm = (spec: Confirmation<TOutput> & { input: (values: ConfirmValues) => TInput }): void => {
    flash.show(null);
    confirmWith(
      spec,
      (values) => mutateAsync(spec.input(values)),
      (values) => runAsync(spec.input(values)),
    );
  };

  return { run, runAsync, confirm, isPending };
}

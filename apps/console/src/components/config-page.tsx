"use client";
import type { UseMutationOptions } from "@tanstack/react-query";
import { type ReactNode, useState } from "react";
import type { z } from "zod";
import { ConfigForm, type FieldSpec } from "./config-form";
import { type Column, DataTable, type ListQuery } from "./data-table";
import { Page } from "./page";
import { useViewer } from "./providers";
import { Empty } from "./states";
import { type Refreshes, useAction } from "./use-action";

/** A ConfigForm whose submit is an action (`useAction`): the write, the refresh, the flash message. */
export function ActionForm<TValues, TInput, TOutput, TError, TContext>({
  mutation,
  toInput,
  refreshes,
  success,
  onDone,
  ...form
}: {
  mutation: UseMutationOptions<TOutput, TError, TInput, TContext>;
  toInput: (values: TValues) => TInput;
  refreshes: Refreshes;
  success: (result: TOutput) => string;
  onDone: () => void;
  fields: FieldSpec[];
  schema: z.ZodType<TValues>;
  mode: "create" | "edit";
  initial?: Record<string, unknown>;
  submitLabel: string;
}) {
  const action = useAction(mutation, { refreshes, success, onDone });
  return (
    <ConfigForm
      {...form}
      onCancel={onDone}
      onSubmit={async (values) => {
        await action.runAsync(toInput(values));
      }}
    />
  );
}

/**
 * The "New …" and "Edit …" forms of a control-plane object, validated with the server's zod
 * schemas; a write refreshes `refreshes` and says so in the flash message. `newButton` and
 * `editButton(row)` open them, `panel` is where they render. Without `update`, objects are only created.
 */
export function useConfigEditor<Row extends { id: string }, TCreate, TCreated extends { id: string }, TEdit, TUpdated, TError>({
  noun,
  rows,
  fields,
  createSchema,
  editSchema,
  defaults,
  create,
  update,
  refreshes,
  created = (row) => `Created ${noun} ${row.id}.`,
  canEdit,
}: {
  noun: string;
  rows: readonly Row[] | undefined;
  fields: FieldSpec[];
  createSchema: z.ZodType<TCreate>;
  editSchema?: z.ZodType<TEdit>;
  defaults?: Record<string, unknown>;
  create: UseMutationOptions<TCreated, TError, TCreate>;
  update?: UseMutationOptions<TUpdated, TError, { id: string; patch: TEdit }>;
  refreshes: Refreshes;
  /** The flash message after a create. */
  created?: (row: TCreated) => string;
  canEdit: boolean;
}) {
  const [editing, setEditing] = useState<string | null>(null);
  const close = () => setEditing(null);
  const editingRow = editing && editing !== "new" ? rows?.find((r) => r.id === editing) : undefined;
  const title = editing === "new" ? `New ${noun}` : `Edit ${noun} ${editing}`;

  const newButton = canEdit ? (
    <button type="button" className="button primary" onClick={() => setEditing("new")} disabled={editing === "new"}>
      New {noun}
    </button>
  ) : null;
  const editButton = (row: Row) =>
    canEdit && update ? (
      <button type="button" className="button small" onClick={() => setEditing(row.id)} aria-label={`Edit ${noun} ${row.id}`}>
        Edit
      </button>
    ) : null;

  const panel =
    canEdit && editing ? (
      <section className="panel" aria-label={title}>
        <h2>{title}</h2>
        {editing === "new" ? (
          <ActionForm
            key="new"
            mutation={create}
            toInput={(values) => values}
            refreshes={refreshes}
            success={created}
            onDone={close}
            fields={fields}
            schema={createSchema}
            mode="create"
            {...(defaults ? { initial: defaults } : {})}
            submitLabel={`Create ${noun}`}
          />
        ) : editingRow && editSchema && update ? (
          <ActionForm
            key={editing}
            mutation={update}
            toInput={(patch) => ({ id: editingRow.id, patch })}
            refreshes={refreshes}
            success={() => `Saved ${noun} ${editingRow.id}.`}
            onDone={close}
            fields={fields}
            schema={editSchema}
            mode="edit"
            initial={editingRow}
            submitLabel="Save changes"
          />
        ) : null}
      </section>
    ) : null;

  return { newButton, editButton, panel };
}

/**
 * A control-plane table page: the rows (a page at a time), and for admins a "New" form and an
 * "Edit" form per row (`useConfigEditor`). Operators and viewers see the table, with the row actions
 * the view gives them (`rowActions`).
 */
export function ConfigPage<Row extends { id: string }, TCreate, TCreated extends { id: string }, TEdit, TUpdated, TError>({
  title,
  intro,
  query,
  columns,
  rowActions,
  emptyHint,
  ...editor
}: {
  title: string;
  intro: ReactNode;
  query: ListQuery<Row>;
  columns: ReadonlyArray<Column<Row>>;
  rowActions?: (row: Row) => ReactNode;
  emptyHint?: ReactNode;
} & Omit<Parameters<typeof useConfigEditor<Row, TCreate, TCreated, TEdit, TUpdated, TError>>[0], "rows" | "canEdit">) {
  const canEdit = useViewer().can("admin");
  const { newButton, editButton, panel } = useConfigEditor({ ...editor, rows: query.data, canEdit });
  const hasActions = canEdit || rowActions !== undefined;
  return (
    <Page title={title} description={intro} actions={newButton}>
      {panel}
      <DataTable
        query={query}
        columns={columns}
        rowKey={(row) => row.id}
        caption={title}
        {...(hasActions
          ? {
              rowActions: (row: Row) => (
                <>
                  {rowActions?.(row)}
                  {editButton(row)}
                </>
              ),
              rowLabel: (row: Row) => `${editor.noun} ${row.id}`,
            }
          : {})}
        empty={<Empty title={`No ${editor.noun}s yet`}>{emptyHint}</Empty>}
      />
    </Page>
  );
}

/** `—` for null, the value otherwise (with a unit). */
export const orNone = (value: unknown, unit = ""): string => (value === null || value === undefined || value === "" ? "—" : `${String(value)}${unit}`);

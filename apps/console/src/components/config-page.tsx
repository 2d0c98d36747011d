"use client";
import { useState, type ReactNode } from "react";
import type { z } from "zod";
import { ConfigForm, type FieldSpec } from "./config-form";
import { Empty, QueryView } from "./states";

export type Column<Row> = { header: string; cell: (row: Row) => ReactNode; isNumeric?: boolean; isWrapping?: boolean };

/**
 * A control-plane table page: the rows, and for admins a "New" form and an "Edit" form per row,
 * both validated with the server's zod schemas. Operators and viewers see the table only.
 */
export function ConfigPage<Row extends { id: string }>({
  title,
  noun,
  intro,
  query,
  columns,
  fields,
  createSchema,
  editSchema,
  onCreate,
  onUpdate,
  canEdit,
  rowActions,
  emptyHint,
  defaults,
}: {
  title: string;
  noun: string;
  intro: ReactNode;
  query: { data: Row[] | undefined; error: unknown; isPending: boolean; refetch: () => unknown };
  columns: Column<Row>[];
  fields: FieldSpec[];
  createSchema: z.ZodType;
  editSchema: z.ZodType;
  onCreate: (values: Record<string, unknown>) => Promise<unknown>;
  onUpdate: (id: string, patch: Record<string, unknown>) => Promise<unknown>;
  canEdit: boolean;
  rowActions?: (row: Row) => ReactNode;
  emptyHint?: ReactNode;
  defaults?: Record<string, unknown>;
}) {
  const [editing, setEditing] = useState<string | null>(null);
  const [flash, setFlash] = useState<string | null>(null);
  const editingRow = editing && editing !== "new" ? query.data?.find((r) => r.id === editing) : undefined;

  return (
    <section aria-labelledby="page-title">
      <header className="page-head">
        <div>
          <h1 id="page-title">{title}</h1>
          <p className="intro">{intro}</p>
        </div>
        {canEdit ? (
          <button type="button" className="button primary" onClick={() => setEditing("new")} disabled={editing === "new"}>
            New {noun}
          </button>
        ) : null}
      </header>
      {flash ? (
        <p className="flash" role="status">
          {flash}
        </p>
      ) : null}

      {canEdit && editing ? (
        <div className="panel" aria-label={editing === "new" ? `New ${noun}` : `Edit ${noun} ${editing}`} role="region">
          <h2>{editing === "new" ? `New ${noun}` : `Edit ${noun} ${editing}`}</h2>
          {editing === "new" || editingRow ? (
            <ConfigForm
              key={editing}
              fields={fields}
              schema={editing === "new" ? createSchema : editSchema}
              mode={editing === "new" ? "create" : "edit"}
              {...(editing === "new" ? (defaults ? { initial: defaults } : {}) : { initial: editingRow as unknown as Record<string, unknown> })}
              submitLabel={editing === "new" ? `Create ${noun}` : "Save changes"}
              onCancel={() => setEditing(null)}
              onSubmit={async (values) => {
                if (editing === "new") {
                  await onCreate(values);
                  setFlash(`Created ${noun} ${String(values.id ?? "")}.`);
                } else {
                  await onUpdate(editing, values);
                  setFlash(`Saved ${noun} ${editing}.`);
                }
                setEditing(null);
              }}
            />
          ) : null}
        </div>
      ) : null}

      <QueryView query={query}>
        {(rows) =>
          rows.length === 0 ? (
            <Empty title={`No ${noun}s yet`}>{emptyHint}</Empty>
          ) : (
            <div className="table-wrap">
              <table className="grid">
                <thead>
                  <tr>
                    {columns.map((c) => (
                      <th key={c.header} scope="col" className={c.isNumeric ? "num" : undefined}>
                        {c.header}
                      </th>
                    ))}
                    {canEdit || rowActions ? <th scope="col">Actions</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {rows.map((row) => (
                    <tr key={row.id}>
                      {columns.map((c, i) =>
                        i === 0 ? (
                          <th key={c.header} scope="row">
                            {c.cell(row)}
                          </th>
                        ) : (
                          <td key={c.header} className={[c.isNumeric ? "num" : "", c.isWrapping ? "wrap" : ""].join(" ").trim() || undefined}>
                            {c.cell(row)}
                          </td>
                        ),
                      )}
                      {canEdit || rowActions ? (
                        <td>
                          <div className="row-actions in-table">
                            {rowActions?.(row)}
                            {canEdit ? (
                              <button type="button" className="button small" onClick={() => setEditing(row.id)} aria-label={`Edit ${noun} ${row.id}`}>
                                Edit
                              </button>
                            ) : null}
                          </div>
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryView>
    </section>
  );
}

/** `—` for null, the value otherwise (with a unit). */
export const orNone = (value: unknown, unit = ""): string => (value === null || value === undefined || value === "" ? "—" : `${String(value)}${unit}`);

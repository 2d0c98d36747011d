"use client";
import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Tag } from "../../../../components/badges";
import { type Column, DataTable } from "../../../../components/data-table";
import { FormError } from "../../../../components/form-error";
import { Page } from "../../../../components/page";
import { useViewer } from "../../../../components/providers";
import { Empty, errorMessage } from "../../../../components/states";
import { useAction } from "../../../../components/use-action";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";
import { DeadLetterTabs } from "../tabs";

type Code = RouterOutputs["dlq"]["reasonCodes"]["list"]["codes"][number];

export function ReasonCodesView() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const isAdmin = viewer.can("admin");
  const list = useQuery(trpc.dlq.reasonCodes.list.queryOptions({}));
  const [editing, setEditing] = useState<Code | null>(null);
  const save = useAction(trpc.dlq.reasonCodes.upsert.mutationOptions(), {
    refreshes: [trpc.dlq],
    success: (c) => `Reason code ${c.code} saved${c.archived ? " (archived)" : ""}.`,
    onDone: () => setEditing(null),
  });
  const columns: ReadonlyArray<Column<Code>> = [
    { header: "Code", className: "mono", cell: (c) => c.code },
    { header: "Label", cell: (c) => c.label },
    { header: "Description", isWrapping: true, cell: (c) => c.description || "—" },
    { header: "State", cell: (c) => (c.archived ? <Tag>archived</Tag> : <Tag tone="ok">in use</Tag>) },
  ];
  return (
    <Page
      title="Dead letters"
      description="Reason codes say why a failure group failed. Archived codes stay on the groups that have them but are no longer offered."
    >
      <DeadLetterTabs />
      <DataTable
        query={{ ...list, data: list.data?.codes }}
        columns={columns}
        rowKey={(c) => c.code}
        caption="Reason codes"
        loadingLabel="Loading reason codes…"
        empty={
          <Empty title="No reason codes">
            An admin adds them here; the seed creates bug, bad_input, dependency_outage, config, capacity, permission and unknown.
          </Empty>
        }
        {...(isAdmin
          ? {
              rowLabel: (c: Code) => `reason code ${c.code}`,
              rowActions: (c: Code) => (
                <>
                  <button type="button" className="button small" onClick={() => setEditing(c)}>
                    Edit
                  </button>
                  <button type="button" className="button small" onClick={() => save.run({ ...c, archived: !c.archived })}>
                    {c.archived ? "Restore" : "Archive"}
                  </button>
                </>
              ),
            }
          : {})}
      />
      {isAdmin ? <CodeForm key={editing?.code ?? "new"} editing={editing} onSave={save.runAsync} onCancel={() => setEditing(null)} /> : null}
    </Page>
  );
}

function CodeForm({ editing, onSave, onCancel }: { editing: Code | null; onSave: (c: Code) => Promise<unknown>; onCancel: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    const text = (n: string) => String(data.get(n) ?? "").trim();
    setError(null);
    try {
      await onSave({ code: editing?.code ?? text("code"), label: text("label"), description: text("description"), archived: editing?.archived ?? false });
      if (!editing) form.reset();
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <section className="panel" aria-labelledby="code-form-title">
      <h2 id="code-form-title">{editing ? `Edit ${editing.code}` : "Add a reason code"}</h2>
      <form className="config-form" onSubmit={(e) => void submit(e)} noValidate>
        <div className="field">
          <label htmlFor="rc-code">Code (lower-case letters, digits, _)</label>
          <input
            id="rc-code"
            name="code"
            defaultValue={editing?.code ?? ""}
            readOnly={editing !== null}
            required
            pattern="[a-z][a-z0-9_]{0,39}"
            autoComplete="off"
          />
        </div>
        <div className="field">
          <label htmlFor="rc-label">Label</label>
          <input id="rc-label" name="label" defaultValue={editing?.label ?? ""} required maxLength={200} autoComplete="off" />
        </div>
        <div className="field field-textarea">
          <label htmlFor="rc-description">Description</label>
          <input id="rc-description" name="description" defaultValue={editing?.description ?? ""} maxLength={500} autoComplete="off" />
        </div>
        <FormError message={error} />
        <div className="actions">
          <button type="submit" className="button primary">
            {editing ? "Save" : "Add reason code"}
          </button>
          {editing ? (
            <button type="button" className="button" onClick={onCancel}>
              Cancel
            </button>
          ) : null}
        </div>
      </form>
    </section>
  );
}

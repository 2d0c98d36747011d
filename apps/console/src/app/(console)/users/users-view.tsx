"use client";
import type { Role } from "@porter/api";
import { ZPassword, ZRole, ZUserCreate } from "@porter/api/schemas/control-plane";
import { USER_FIELDS } from "@porter/contracts/control-plane";
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { z } from "zod";
import { Tag } from "../../../components/badges";
import { fieldSpec } from "../../../components/config-form";
import { ActionForm, useConfigEditor } from "../../../components/config-page";
import { type Column, DataTable } from "../../../components/data-table";
import { Dialog } from "../../../components/dialog";
import { Page } from "../../../components/page";
import { ROLE_RANK, useViewer } from "../../../components/providers";
import { Empty } from "../../../components/states";
import { useAction } from "../../../components/use-action";
import { ago, dateTime } from "../../../lib/format";
import { type RouterInputs, type RouterOutputs, useTRPC } from "../../../lib/trpc";

type User = RouterOutputs["users"]["list"][number];

const ZNewPassword = z.strictObject({ password: ZPassword });

/** The create form, from the declared user fields (@porter/contracts/control-plane). */
const CREATE_FIELDS = (["email", "name", "role", "password"] as const).map((name) => fieldSpec(name, USER_FIELDS[name]));

const ROLE_CAN: Record<Role, string> = {
  viewer: "read everything and change nothing",
  operator: "also cancel, retry and redrive jobs, and pause and drain queues and pools",
  admin: "also change configuration, API keys and users",
};
const isLowering = (from: Role, to: Role) => ROLE_RANK[to] < ROLE_RANK[from];

export function UsersView() {
  const viewer = useViewer();
  if (!viewer.can("admin")) {
    return (
      <Page title="Users">
        <Empty title="Admins only">Ask an admin to change users and roles.</Empty>
      </Page>
    );
  }
  return <UsersAdmin />;
}

function UsersAdmin() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const users = useQuery(trpc.users.list.queryOptions());
  const refreshes = [trpc.users];
  const [resetting, setResetting] = useState<User | null>(null);
  const update = useAction(trpc.users.update.mutationOptions(), {
    refreshes,
    success: (u, input) => (input.role !== undefined ? `${u.email} is now ${u.role}.` : `${u.email} ${u.disabled_at ? "disabled" : "enabled"}.`),
  });
  const editor = useConfigEditor({
    noun: "user",
    rows: users.data,
    createSchema: ZUserCreate,
    defaults: { role: "viewer" },
    fields: CREATE_FIELDS,
    create: trpc.users.create.mutationOptions(),
    created: (user) => `Created ${user.email} (${user.role}).`,
    refreshes,
    canEdit: true,
  });

  /** A role change or a disable/enable asks first, says what it does, and records a reason. */
  const confirmChange = (u: User, patch: Pick<RouterInputs["users"]["update"], "role" | "disabled">) => {
    const isRole = patch.role !== undefined;
    update.confirm({
      title: isRole ? `Change the role of ${u.email}` : `${patch.disabled ? "Disable" : "Enable"} ${u.email}`,
      confirmLabel: isRole ? `Make ${u.email} ${patch.role}` : `${patch.disabled ? "Disable" : "Enable"} ${u.email}`,
      summary: isRole ? (
        <>
          <p>
            <strong>
              {u.email}: {u.role} → {patch.role}
            </strong>
          </p>
          <p>
            As {patch.role}, they {ROLE_CAN[patch.role!]}. {isLowering(u.role, patch.role!) ? `They lose what ${u.role} may do. ` : ""}It takes effect on their
            next request.
          </p>
        </>
      ) : (
        <p>
          <strong>{u.email}</strong>{" "}
          {patch.disabled ? "can no longer sign in, and their requests are refused from the next one." : `can sign in again, as ${u.role}.`}
        </p>
      ),
      input: ({ reason }) => ({ id: u.id, ...patch, reason }),
    });
  };

  const columns: ReadonlyArray<Column<User>> = [
    {
      header: "Email",
      cell: (u) => (
        <>
          {u.email} {u.email === viewer.email ? <Tag tone="info">you</Tag> : null}
        </>
      ),
    },
    { header: "Name", cell: (u) => u.name || "—" },
    {
      header: "Role",
      cell: (u) => (
        <select aria-label={`Role of ${u.email}`} value={u.role} onChange={(e) => confirmChange(u, { role: ZRole.parse(e.target.value) })}>
          <option value="viewer">viewer</option>
          <option value="operator">operator</option>
          <option value="admin">admin</option>
        </select>
      ),
    },
    { header: "Created", cell: (u) => <span title={dateTime(u.created_at)}>{ago(u.created_at)}</span> },
    { header: "Status", cell: (u) => (u.disabled_at ? <Tag tone="bad">disabled</Tag> : <Tag tone="ok">active</Tag>) },
  ];

  return (
    <Page
      title="Users"
      description="Console users and their roles. Passwords are stored as argon2id hashes; a role change or a disabled account takes effect on the user's next request."
      actions={editor.newButton}
    >
      {editor.panel}
      <DataTable
        query={users}
        columns={columns}
        rowKey={(u) => u.id}
        caption="Users"
        loadingLabel="Loading users…"
        rowLabel={(u) => u.email}
        rowActions={(u) => (
          <>
            <button type="button" className="button small" onClick={() => confirmChange(u, { disabled: !u.disabled_at })}>
              {u.disabled_at ? "Enable…" : "Disable…"}
            </button>
            <button type="button" className="button small" onClick={() => setResetting(u)}>
              Reset password
            </button>
          </>
        )}
        empty={<Empty title="No users yet" />}
      />
      <Dialog open={resetting !== null} title={`Reset the password of ${resetting?.email ?? ""}`} onClose={() => setResetting(null)}>
        {resetting ? (
          <ActionForm
            key={resetting.id}
            mutation={trpc.users.update.mutationOptions()}
            toInput={({ password }) => ({ id: resetting.id, password })}
            refreshes={refreshes}
            success={() => `Password of ${resetting.email} changed.`}
            onDone={() => setResetting(null)}
            fields={[{ name: "password", label: "New password", kind: "password" }]}
            schema={ZNewPassword}
            mode="create"
            submitLabel="Set password"
          />
        ) : null}
      </Dialog>
    </Page>
  );
}

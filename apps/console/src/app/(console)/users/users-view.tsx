"use client";
import { ZPassword, ZUserCreate } from "@porter/api/schemas/control-plane";
import type { Role } from "@porter/api";
import { USER_FIELDS } from "@porter/contracts/control-plane";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Tag } from "../../../components/badges";
import { ConfigForm, fieldSpec } from "../../../components/config-form";
import { useConfirmedAction } from "../../../components/confirm-action";
import { Dialog } from "../../../components/dialog";
import { useViewer } from "../../../components/providers";
import { Empty, errorMessage, QueryView } from "../../../components/states";
import { ago, dateTime } from "../../../lib/format";
import { useTRPC } from "../../../lib/trpc";

/** The create form, from the declared user fields (@porter/contracts/control-plane). */
const CREATE_FIELDS = (["email", "name", "role", "password"] as const).map((name) => fieldSpec(name, USER_FIELDS[name]));

const ROLE_CAN: Record<Role, string> = {
  viewer: "read everything and change nothing",
  operator: "also cancel, retry and redrive jobs, and pause and drain queues and pools",
  admin: "also change configuration, API keys and users",
};
const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };
const isLowering = (from: Role, to: Role) => RANK[to] < RANK[from];

export function UsersView() {
  const viewer = useViewer();
  if (!viewer.can("admin")) {
    return (
      <section aria-labelledby="page-title">
        <h1 id="page-title">Users</h1>
        <Empty title="Admins only">Ask an admin to change users and roles.</Empty>
      </section>
    );
  }
  return <UsersAdmin />;
}

function UsersAdmin() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const queryClient = useQueryClient();
  const users = useQuery(trpc.users.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.users.pathKey() });
  const create = useMutation(trpc.users.create.mutationOptions({ onSuccess: refresh }));
  const update = useMutation(trpc.users.update.mutationOptions({ onSuccess: refresh }));
  const [isCreating, setCreating] = useState(false);
  const [flash, setFlash] = useState<{ tone: "ok" | "bad"; text: string } | null>(null);
  const [resetting, setResetting] = useState<{ id: string; email: string } | null>(null);
  const [password, setPassword] = useState("");
  const [passwordError, setPasswordError] = useState<string | null>(null);

  const confirm = useConfirmedAction();

  /** A role change or a disable/enable asks first, says what it does, and records a reason. */
  const confirmChange = (u: { id: string; email: string; role: Role; disabled_at: string | null }, patch: { role?: Role; disabled?: boolean }) => {
    setFlash(null);
    const isRole = patch.role !== undefined;
    const title = isRole ? `Change the role of ${u.email}` : `${patch.disabled ? "Disable" : "Enable"} ${u.email}`;
    confirm.start({
      title,
      confirmLabel: isRole ? `Make ${u.email} ${patch.role}` : `${patch.disabled ? "Disable" : "Enable"} ${u.email}`,
      summary: isRole ? (
        <>
          <p>
            <strong>
              {u.email}: {u.role} → {patch.role}
            </strong>
          </p>
          <p>
            As {patch.role}, they {ROLE_CAN[patch.role!]}. {isLowering(u.role, patch.role!) ? `They lose what ${u.role} may do. ` : ""}It takes effect on their next request.
          </p>
        </>
      ) : (
        <p>
          <strong>{u.email}</strong>{" "}
          {patch.disabled ? "can no longer sign in, and their requests are refused from the next one." : `can sign in again, as ${u.role}.`}
        </p>
      ),
      run: async (reason) => {
        await update.mutateAsync({ id: u.id, ...patch, reason });
        return isRole ? `${u.email} is now ${patch.role}.` : `${u.email} ${patch.disabled ? "disabled" : "enabled"}.`;
      },
    });
  };

  return (
    <section aria-labelledby="page-title">
      <header className="page-head">
        <div>
          <h1 id="page-title">Users</h1>
          <p className="intro">Console users and their roles. Passwords are stored as argon2id hashes; a role change or a disabled account takes effect on the user's next request.</p>
        </div>
        <button type="button" className="button primary" onClick={() => setCreating(true)} disabled={isCreating}>
          New user
        </button>
      </header>
      {flash ? (
        <p className={`flash flash-${flash.tone}`} role="status">
          {flash.text}
        </p>
      ) : null}
      {confirm.notice ? (
        <p className={`flash flash-${confirm.notice.tone}`} role="status">
          {confirm.notice.text}
        </p>
      ) : null}
      {isCreating ? (
        <div className="panel" role="region" aria-label="New user">
          <h2>New user</h2>
          <ConfigForm
            mode="create"
            schema={ZUserCreate}
            initial={{ role: "viewer" }}
            fields={CREATE_FIELDS}
            submitLabel="Create user"
            onCancel={() => setCreating(false)}
            onSubmit={async (values) => {
              const user = await create.mutateAsync(values as never);
              setFlash({ tone: "ok", text: `Created ${user.email} (${user.role}).` });
              setCreating(false);
            }}
          />
        </div>
      ) : null}
      <QueryView query={users} loadingLabel="Loading users…">
        {(rows) => (
          <div className="table-wrap">
            <table className="grid">
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Name</th>
                  <th scope="col">Role</th>
                  <th scope="col">Created</th>
                  <th scope="col">Status</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((u) => (
                  <tr key={u.id}>
                    <th scope="row">
                      {u.email} {u.email === viewer.email ? <Tag tone="info">you</Tag> : null}
                    </th>
                    <td>{u.name || "—"}</td>
                    <td>
                      <select
                        aria-label={`Role of ${u.email}`}
                        value={u.role}
                        onChange={(e) => confirmChange(u, { role: e.target.value as Role })}
                      >
                        <option value="viewer">viewer</option>
                        <option value="operator">operator</option>
                        <option value="admin">admin</option>
                      </select>
                    </td>
                    <td title={dateTime(u.created_at)}>{ago(u.created_at)}</td>
                    <td>{u.disabled_at ? <Tag tone="bad">disabled</Tag> : <Tag tone="ok">active</Tag>}</td>
                    <td>
                      <div className="row-actions in-table">
                      <button
                        type="button"
                        className="button small"
                        onClick={() => confirmChange(u, { disabled: !u.disabled_at })}
                      >
                        {u.disabled_at ? "Enable…" : "Disable…"}
                      </button>
                      <button type="button" className="button small" onClick={() => (setResetting({ id: u.id, email: u.email }), setPassword(""), setPasswordError(null))}>
                        Reset password
                      </button>
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </QueryView>
      {confirm.element}
      <Dialog open={resetting !== null} title={`Reset the password of ${resetting?.email ?? ""}`} onClose={() => setResetting(null)}>
        <form
          className="config-form"
          onSubmit={async (e) => {
            e.preventDefault();
            const parsed = ZPassword.safeParse(password);
            if (!parsed.success) return setPasswordError(parsed.error.issues[0]?.message ?? "invalid");
            try {
              await update.mutateAsync({ id: resetting!.id, password: parsed.data });
              setFlash({ tone: "ok", text: `Password of ${resetting!.email} changed.` });
              setResetting(null);
            } catch (error) {
              setPasswordError(errorMessage(error));
            }
          }}
        >
          <div className={`field${passwordError ? " has-error" : ""}`}>
            <label htmlFor="new-password">New password</label>
            <input id="new-password" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} aria-invalid={passwordError ? true : undefined} />
            {passwordError ? (
              <small className="field-error" role="alert">
                {passwordError}
              </small>
            ) : null}
          </div>
          <div className="actions">
            <button type="submit" className="button primary">
              Set password
            </button>
            <button type="button" className="button" onClick={() => setResetting(null)}>
              Cancel
            </button>
          </div>
        </form>
      </Dialog>
    </section>
  );
}

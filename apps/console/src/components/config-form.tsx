"use client";
import type { EntityDecl, FieldDecl } from "@porter/contracts/control-plane";
import { TRPCClientError } from "@trpc/client";
import { type FormEvent, useId, useRef, useState } from "react";
import type { z } from "zod";
import { FormError } from "./form-error";
import { errorMessage } from "./states";

/** One input of a control-plane form. */
export type FieldSpec = {
  name: string;
  label: string;
  kind: "text" | "textarea" | "int" | "number" | "select" | "list" | "checkbox" | "password" | "email";
  /** Empty means null ("none") rather than "use the default". */
  isNullable?: boolean;
  /** The object's id: typed on create, fixed on edit. */
  isId?: boolean;
  options?: ReadonlyArray<{ value: string; label: string }>;
  help?: string;
  placeholder?: string;
  /** Unit shown after the input (s, ms, jobs/s). */
  unit?: string;
};

const KIND_OF: Record<FieldDecl["kind"], FieldSpec["kind"]> = {
  int: "int",
  rate: "number",
  text: "text",
  textarea: "textarea",
  enum: "select",
  ref: "select",
  origins: "list",
  color: "text",
};

/** The input of one declared field (@porter/contracts/control-plane): its label, help, unit, kind and options. */
export const fieldSpec = (
  name: string,
  f: Pick<FieldDecl, "label" | "help" | "unit" | "placeholder"> & { kind: string; isNullable?: boolean; options?: FieldSpec["options"] },
): FieldSpec => ({
  name,
  label: f.label,
  kind: (KIND_OF as Record<string, FieldSpec["kind"]>)[f.kind] ?? (f.kind as FieldSpec["kind"]),
  ...(f.isNullable ? { isNullable: true } : {}),
  ...(f.options ? { options: f.options } : {}),
  ...(f.help ? { help: f.help } : {}),
  ...(f.unit ? { unit: f.unit } : {}),
  ...(f.placeholder ? { placeholder: f.placeholder } : {}),
});

/**
 * The form of an entity, derived from its declaration: the id, then every field (or `names`, in
 * that order). A view only chooses layout: which fields, their order, and `overrides` such as the
 * options of a reference (the pools a queue may pick).
 */
export const entityFields = (entity: EntityDecl, opts: { names?: readonly string[]; overrides?: Record<string, Partial<FieldSpec>> } = {}): FieldSpec[] => [
  { name: "id", label: entity.idLabel, kind: "text", isId: true, placeholder: entity.idPlaceholder, ...opts.overrides?.id },
  ...(opts.names ?? Object.keys(entity.fields)).map((name) => ({ ...fieldSpec(name, entity.fields[name]!), ...opts.overrides?.[name] })),
];

type Raw = Record<string, string | boolean>;

const toRaw = (fields: FieldSpec[], initial: Record<string, unknown> | undefined): Raw =>
  Object.fromEntries(
    fields.map((f) => {
      const v = initial?.[f.name];
      if (f.kind === "checkbox") return [f.name, Boolean(v)];
      if (Array.isArray(v)) return [f.name, v.join(", ")];
      return [f.name, v === null || v === undefined ? "" : String(v)];
    }),
  );

/** Form strings → the object the zod schema (and the server) takes. */
const toValues = (fields: FieldSpec[], raw: Raw, skipId: boolean): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (skipId && f.isId) continue;
    const v = raw[f.name];
    if (f.kind === "checkbox") {
      out[f.name] = Boolean(v);
      continue;
    }
    const s = String(v ?? "").trim();
    if (f.kind === "list") out[f.name] = s === "" ? [] : s.split(/[\s,]+/).filter(Boolean);
    else if (s === "") {
      if (f.isNullable) out[f.name] = null;
      else if (f.kind === "text" || f.kind === "textarea" || f.kind === "email" || f.kind === "password" || f.kind === "select") out[f.name] = "";
      // A number left empty: on create, absent (the schema's default applies); on edit, an error.
      else if (skipId) out[f.name] = "";
    } else if (f.kind === "int" || f.kind === "number") out[f.name] = Number.isNaN(Number(s)) ? s : Number(s);
    else out[f.name] = f.kind === "password" ? String(v) : s;
  }
  return out;
};

/** Field errors of a zod error or of a server error carrying `details.issues`; the rest as a form error. */
const issuesToErrors = (issues: ReadonlyArray<{ path?: ReadonlyArray<PropertyKey>; message?: string }>, fieldNames: string[]) => {
  const fields: Record<string, string> = {};
  const other: string[] = [];
  for (const issue of issues) {
    const path = (issue.path ?? []).map(String);
    const name = path.find((p) => fieldNames.includes(p));
    if (name && !fields[name]) fields[name] = issue.message ?? "invalid";
    else if (!name) other.push(`${path.join(".") || "input"}: ${issue.message ?? "invalid"}`);
  }
  return { fields, other };
};

/**
 * A control-plane form: the inputs of `fields`, validated on submit with `schema` — the same zod
 * schema the server validates with — showing each problem under its field; server refusals with
 * field issues (an unknown pool, a duplicate id) land on their field too.
 */
export function ConfigForm<T>({
  fields,
  schema,
  initial,
  mode,
  submitLabel,
  onSubmit,
  onCancel,
}: {
  fields: FieldSpec[];
  schema: z.ZodType<T>;
  initial?: Record<string, unknown>;
  mode: "create" | "edit";
  submitLabel: string;
  onSubmit: (values: T) => Promise<void>;
  onCancel?: () => void;
}) {
  const formId = useId();
  const formRef = useRef<HTMLFormElement>(null);
  const [raw, setRaw] = useState<Raw>(() => toRaw(fields, initial));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [isBusy, setBusy] = useState(false);
  const names = fields.map((f) => f.name);

  const focusFirstError = (fieldErrors: Record<string, string>) => {
    const first = fields.find((f) => fieldErrors[f.name]);
    if (first) formRef.current?.querySelector<HTMLElement>(`[name="${first.name}"]`)?.focus();
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setFormError(null);
    const values = toValues(fields, raw, mode === "edit");
    const parsed = schema.safeParse(values);
    if (!parsed.success) {
      const { fields: fieldErrors, other } = issuesToErrors(parsed.error.issues, names);
      setErrors(fieldErrors);
      setFormError(other.length ? other.join("; ") : "Fix the highlighted fields.");
      focusFirstError(fieldErrors);
      return;
    }
    setErrors({});
    setBusy(true);
    try {
      await onSubmit(parsed.data);
    } catch (error) {
      const issues: unknown = error instanceof TRPCClientError ? (error.data as { details?: { issues?: unknown } } | undefined)?.details?.issues : undefined;
      if (Array.isArray(issues) && issues.length > 0) {
        const { fields: fieldErrors, other } = issuesToErrors(issues, names);
        setErrors(fieldErrors);
        setFormError(other.length ? other.join("; ") : errorMessage(error));
        focusFirstError(fieldErrors);
      } else setFormError(errorMessage(error));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form ref={formRef} className="config-form" onSubmit={submit} noValidate aria-describedby={formError ? `${formId}-error` : undefined}>
      <div className="fields">
        {fields.map((f) => {
          const id = `${formId}-${f.name}`;
          const error = errors[f.name];
          const described = [error ? `${id}-error` : null, f.help ? `${id}-help` : null].filter(Boolean).join(" ") || undefined;
          const common = {
            id,
            name: f.name,
            "aria-invalid": error ? true : undefined,
            "aria-describedby": described,
            disabled: isBusy || (mode === "edit" && f.isId),
          };
          const set = (value: string | boolean) => setRaw((r) => ({ ...r, [f.name]: value }));
          return (
            <div key={f.name} className={`field field-${f.kind}${error ? " has-error" : ""}`}>
              {f.kind === "checkbox" ? (
                <label className="check">
                  <input type="checkbox" {...common} checked={Boolean(raw[f.name])} onChange={(e) => set(e.target.checked)} /> {f.label}
                </label>
              ) : (
                <>
                  <label htmlFor={id}>{f.label}</label>
                  <div className="input-row">
                    {f.kind === "select" ? (
                      <select {...common} value={String(raw[f.name] ?? "")} onChange={(e) => set(e.target.value)}>
                        {f.isNullable || !raw[f.name] ? <option value="">{f.isNullable ? "— none —" : "— choose —"}</option> : null}
                        {(f.options ?? []).map((o) => (
                          <option key={o.value} value={o.value}>
                            {o.label}
                          </option>
                        ))}
                      </select>
                    ) : f.kind === "textarea" ? (
                      <textarea {...common} rows={2} value={String(raw[f.name] ?? "")} placeholder={f.placeholder} onChange={(e) => set(e.target.value)} />
                    ) : (
                      <input
                        {...common}
                        type={f.kind === "int" || f.kind === "number" ? "text" : f.kind === "list" ? "text" : f.kind}
                        inputMode={f.kind === "int" ? "numeric" : f.kind === "number" ? "decimal" : undefined}
                        autoComplete={f.kind === "password" ? "new-password" : "off"}
                        value={String(raw[f.name] ?? "")}
                        placeholder={f.placeholder ?? (f.isNullable ? "none" : undefined)}
                        onChange={(e) => set(e.target.value)}
                      />
                    )}
                    {f.unit ? <span className="unit">{f.unit}</span> : null}
                  </div>
                </>
              )}
              {f.help ? (
                <small id={`${id}-help`} className="help">
                  {f.help}
                </small>
              ) : null}
              {error ? (
                <small id={`${id}-error`} className="field-error" role="alert">
                  {error}
                </small>
              ) : null}
            </div>
          );
        })}
      </div>
      <FormError message={formError} id={`${formId}-error`} />
      <div className="actions">
        <button type="submit" className="button primary" disabled={isBusy}>
          {isBusy ? "Saving…" : submitLabel}
        </button>
        {onCancel ? (
          <button type="button" className="button" onClick={onCancel} disabled={isBusy}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

"use client";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../lib/trpc";

/** `list` with `value` added (`on`) or taken out. */
export const toggled = (list: readonly string[], value: string, on: boolean): string[] => (on ? [...list, value] : list.filter((v) => v !== value));

/**
 * Which job types something applies to (an API key's, a status link's): "all", or the ones ticked
 * from the registry. `chosen` is kept while "all" is ticked, so unticking it restores the choice.
 */
export function JobTypeScope(props: {
  legend: string;
  allLabel: string;
  isAll: boolean;
  onAllChange: (isAll: boolean) => void;
  chosen: readonly string[];
  onChosenChange: (chosen: string[]) => void;
  error?: string | undefined;
}) {
  const trpc = useTRPC();
  const types = useQuery(trpc.jobTypes.list.queryOptions());
  return (
    <fieldset className={`field${props.error ? " has-error" : ""}`}>
      <legend>{props.legend}</legend>
      <label className="check">
        <input type="checkbox" checked={props.isAll} onChange={(e) => props.onAllChange(e.target.checked)} /> {props.allLabel}
      </label>
      {!props.isAll
        ? (types.data ?? []).map((t) => (
            <label key={t.id} className="check">
              <input
                type="checkbox"
                checked={props.chosen.includes(t.id)}
                onChange={(e) => props.onChosenChange(toggled(props.chosen, t.id, e.target.checked))}
              />{" "}
              {t.id}
            </label>
          ))
        : null}
      {props.error ? (
        <small className="field-error" role="alert">
          {props.error}
        </small>
      ) : null}
    </fieldset>
  );
}

"use client";
import Link from "next/link";
import { useState } from "react";
import { idTail } from "../lib/format";

/**
 * A small button that copies a full id to the clipboard, for tables that show a shortened one.
 * Falls back to selecting a hidden text field where the Clipboard API is unavailable.
 */
export function CopyId({ id, label = "id" }: { id: string; label?: string }) {
  const [isCopied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(id);
    } catch {
      const field = document.createElement("textarea");
      field.value = id;
      document.body.append(field);
      field.select();
      document.execCommand("copy");
      field.remove();
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 1_500);
  };
  return (
    <button type="button" className="copy-id" onClick={() => void copy()} aria-label={`Copy ${label} ${id}`} title={`Copy ${id}`}>
      {isCopied ? "copied" : "copy"}
    </button>
  );
}

/** A job's id in a table: its last 12 digits linking to the job's page (the full id on hover), and a copy button. */
export function JobIdCell({ jobId, testId }: { jobId: string; testId: string }) {
  return (
    <>
      <Link className="mono" href={`/jobs/${jobId}`} title={jobId} data-testid={testId}>
        {idTail(jobId)}
      </Link>{" "}
      <CopyId id={jobId} label="job id" />
    </>
  );
}

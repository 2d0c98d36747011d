"use client";
import { useState } from "react";

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

"use client";
import { type ReactNode, useEffect, useId, useRef } from "react";

/**
 * A modal dialog on the native <dialog> element: focus moves into it and is kept there, Escape
 * closes it (calling `onClose`) unless `canClose` is false (an action is under way), and focus
 * returns to what opened it.
 */
export function Dialog({
  open,
  title,
  onClose,
  canClose = true,
  children,
}: {
  open: boolean;
  title: string;
  onClose: () => void;
  canClose?: boolean;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      onClose={onClose}
      onCancel={(event) => {
        if (!canClose) event.preventDefault();
      }}
    >
      {open ? (
        <>
          <h2 id={titleId}>{title}</h2>
          {children}
        </>
      ) : null}
    </dialog>
  );
}

"use client";
import type { ReactNode } from "react";
import { useViewer } from "../../../../components/providers";

/** Its children for admins only (the button-hiding of `useViewer().can`; the API refuses anyway). */
export function AdminOnly({ children }: { children: ReactNode }) {
  return useViewer().can("admin") ? children : null;
}

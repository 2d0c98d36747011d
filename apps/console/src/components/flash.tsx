"use client";
import { usePathname } from "next/navigation";
import { createContext, type ReactNode, useContext, useState } from "react";

/** The outcome of the last action: good news is a status, a failure an alert. */
export type Notice = { tone: "ok" | "bad"; text: string };

const FlashContext = createContext<{ notice: Notice | null; show: (notice: Notice | null) => void } | null>(null);

/** Holds the console's one flash message; it is cleared when the user moves to another page. */
export function FlashProvider({ children }: { children: ReactNode }) {
  const [notice, show] = useState<Notice | null>(null);
  // Cleared while the next page renders (React's "adjusting state when a prop changes"), so the
  // old page's message is never painted on the new one.
  const pathname = usePathname();
  const [shownOn, setShownOn] = useState(pathname);
  if (shownOn !== pathname) {
    setShownOn(pathname);
    show(null);
  }
  return <FlashContext.Provider value={{ notice, show }}>{children}</FlashContext.Provider>;
}

/** `show(notice)` replaces the flash message (`null` clears it); `useAction` calls it for every action. */
export const useFlash = () => {
  const flash = useContext(FlashContext);
  if (!flash) throw new Error("useFlash outside <FlashProvider>");
  return flash;
};

/** The flash message, where `Page` puts it: under the page header. */
export function FlashMessage() {
  const { notice } = useFlash();
  if (!notice) return null;
  return (
    <p className={`flash${notice.tone === "bad" ? " flash-bad" : ""}`} role={notice.tone === "bad" ? "alert" : "status"}>
      {notice.text}
    </p>
  );
}

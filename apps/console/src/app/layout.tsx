import type { Metadata, Viewport } from "next";
import type { ReactNode } from "react";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Porter", template: "%s · Porter" },
  description: "Durable job queue on PostgreSQL — operator console",
};

// Rendered per request, every page: the CSP nonce (proxy.ts) differs per response, and a page
// prerendered at build time would carry scripts without it.
export const dynamic = "force-dynamic";

export const viewport: Viewport = { width: "device-width", initialScale: 1 };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}

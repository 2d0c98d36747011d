import type { Metadata } from "next";
import type { ReactNode } from "react";
import "./globals.css";

export const metadata: Metadata = {
  title: "Porter",
  description: "Durable job queue on PostgreSQL — operator console",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <header className="topbar">
          <a className="brand" href="/">
            Porter
          </a>
          <span className="tagline">job queue console</span>
        </header>
        <main className="content">{children}</main>
      </body>
    </html>
  );
}

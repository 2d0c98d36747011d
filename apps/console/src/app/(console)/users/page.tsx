import type { Metadata } from "next";
import { UsersView } from "./users-view";

export const metadata: Metadata = { title: "Users" };

export default function Page() {
  return <UsersView />;
}

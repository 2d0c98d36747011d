import { defineConfig } from "prisma/config";

// `env()` would throw when DATABASE_URL is unset, which breaks `prisma generate` on a fresh clone.
export default defineConfig({
  schema: "../../prisma/schema.prisma",
  datasource: { url: process.env.DATABASE_URL ?? "" },
});

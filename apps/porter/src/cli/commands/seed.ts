import { seedDemo } from "../../seed/demo";
import { defineCommand } from "../command";

/** `seed`: writes the demo configuration into an empty control plane. */
export const seedCommand = defineCommand({
  name: "seed",
  summary: "seed the demo configuration (pools, queues, job types, tenants, admin, a producer key)",
  usage: "seed [--force] [--json]",
  description:
    "Seeds the demo configuration of DESIGN.md when the control plane is empty (pools interactive,\n"
    + "background, agents; queues; job types; tenants tenant_A/B/C), the admin user\n"
    + "(PORTER_ADMIN_EMAIL, default admin@porter.local; PORTER_ADMIN_PASSWORD or a generated one, printed\n"
    + "once) and, when the database has no API key, a producer key (printed once). Audited, idempotent.",
  options: { force: { type: "boolean", help: "also seed when the control plane has rows (adds only the missing demo rows)" } },
  run: async (ctx, { values }) => {
    const { prisma } = await ctx.db();
    const result = await seedDemo(prisma, {
      actor: "seed",
      adminEmail: ctx.env.PORTER_ADMIN_EMAIL,
      ...(ctx.env.PORTER_ADMIN_PASSWORD ? { adminPassword: ctx.env.PORTER_ADMIN_PASSWORD } : {}),
      force: values.force ?? false,
    });
    const human = result.created
      ? ["Seeded the demo configuration.", ...seedSummaryLines(result)]
      : ["The control plane already has a configuration: nothing seeded (--force adds the missing demo rows)."];
    ctx.out.result(
      {
        created: result.created,
        admin_email: result.adminEmail,
        admin_created: result.adminCreated,
        ...(result.adminPassword ? { admin_password: result.adminPassword } : {}),
        ...(result.producerKey ? { producer_key: result.producerKey } : {}),
      },
      human,
    );
  },
});

/** The admin login and producer key lines shown after a seed (secrets only when just created). */
export const seedSummaryLines = (result: { adminEmail: string; adminCreated: boolean; adminPassword?: string; producerKey?: string }): string[] => {
  const lines: string[] = [];
  if (result.adminCreated) {
    lines.push(
      result.adminPassword
        ? `  admin login:  ${result.adminEmail} / ${result.adminPassword}   (generated; shown only this once)`
        : `  admin login:  ${result.adminEmail} / the password in PORTER_ADMIN_PASSWORD`,
    );
  }
  if (result.producerKey) {
    lines.push(`  producer key: ${result.producerKey}   (tenants tenant_A, tenant_B, tenant_C; every job type; shown only this once)`);
  }
  return lines;
};

import { createUser } from "@porter/core";
import { defineCommand } from "../command";
import { UsageError } from "../errors";

const ROLES = ["viewer", "operator", "admin"] as const;
type Role = (typeof ROLES)[number];

/** `users create`: a console user with a role (the password is hashed with argon2id). */
export const usersCreateCommand = defineCommand({
  name: "users create",
  summary: "create a console user (viewer, operator or admin)",
  usage: "users create --email E --role viewer|operator|admin --password P [--name N] [--json]",
  description:
    "Creates a console user. The password is stored as an argon2id hash; pass it through an\n"
    + 'environment variable rather than your shell history (--password "$PASSWORD"). Audited.\n'
    + 'With --json prints {"id", "email", "role"}.',
  options: {
    email: { type: "string", arg: "<email>", help: "sign-in email (required)", required: true },
    role: {
      type: "string",
      arg: "<role>",
      help: "viewer (reads), operator (also acts on jobs and queues), admin (also configuration, keys, users)",
      required: true,
    },
    password: { type: "string", arg: "<password>", help: "at least 12 characters (required)", required: true },
    name: { type: "string", arg: "<name>", help: "display name" },
  },
  run: async (ctx, { cmd, values }) => {
    const { email, role, password } = values;
    if (!ROLES.includes(role as Role)) throw new UsageError(`${cmd}: --role must be one of ${ROLES.join(", ")}`);
    if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new UsageError(`${cmd}: --email must be an email address`);
    if (password.length < 12) throw new UsageError(`${cmd}: --password must have at least 12 characters`);
    const { prisma } = await ctx.db();
    const user = await createUser(prisma, { email, role: role as Role, password, ...(values.name ? { name: values.name } : {}), actor: ctx.actor });
    ctx.out.result({ id: user.id, email: user.email, role: user.role }, `created ${user.role} ${user.email}`);
  },
});

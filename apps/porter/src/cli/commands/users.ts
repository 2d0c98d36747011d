import { createUser } from "@porter/core";
import { parseCommandArgs, required } from "../args";
import { type Command, helpText } from "../command";
import { UsageError } from "../errors";

const ROLES = ["viewer", "operator", "admin"] as const;
type Role = (typeof ROLES)[number];

/** `users create`: a console user with a role (the password is hashed with argon2id). */
export const usersCreateCommand: Command = {
  name: "users create",
  summary: "create a console user (viewer, operator or admin)",
  help: helpText(
    "users create --email E --role viewer|operator|admin --password P [--name N] [--json]",
    "Creates a console user. The password is stored as an argon2id hash; pass it through an\n"
      + 'environment variable rather than your shell history (--password "$PASSWORD"). Audited.\n'
      + 'With --json prints {"id", "email", "role"}.',
    [
      ["--email <email>", "sign-in email (required)"],
      ["--role <role>", "viewer (reads), operator (also acts on jobs and queues), admin (also configuration, keys, users)"],
      ["--password <password>", "at least 12 characters (required)"],
      ["--name <name>", "display name"],
    ],
  ),
  run: async (ctx, argv) => {
    const cmd = "users create";
    const { values } = parseCommandArgs(cmd, argv, {
      email: { type: "string" },
      role: { type: "string" },
      password: { type: "string" },
      name: { type: "string" },
    });
    const email = required(cmd, "email", values.email);
    const role = required(cmd, "role", values.role);
    const password = required(cmd, "password", values.password);
    if (!ROLES.includes(role as Role)) throw new UsageError(`${cmd}: --role must be one of ${ROLES.join(", ")}`);
    if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new UsageError(`${cmd}: --email must be an email address`);
    if (password.length < 12) throw new UsageError(`${cmd}: --password must have at least 12 characters`);
    const { prisma } = await ctx.db();
    const user = await createUser(prisma, { email, role: role as Role, password, ...(values.name ? { name: values.name } : {}), actor: ctx.actor });
    ctx.out.result({ id: user.id, email: user.email, role: user.role }, `created ${user.role} ${user.email}`);
  },
};

import { describe, expect, it } from "vitest";
import { compareLsn, isConnectionFailure, isLsn, parseLsn } from "./read-replica";
import { readReplicaUrl } from "./runtime-role";

describe("LSNs", () => {
  it("parses both halves as hex and orders by the 64-bit position, not the text", () => {
    expect(parseLsn("0/3001F80")).toBe(0x3001f80n);
    expect(parseLsn("16/B374D848")).toBe((0x16n << 32n) | 0xb374d848n);
    expect(compareLsn("0/FFFFFFFF", "1/0")).toBe(-1);
    expect(compareLsn("0/A0", "0/9F")).toBe(1); // "0/A0" < "0/9F" as text
    expect(compareLsn("2/10", "2/10")).toBe(0);
  });

  it("refuses anything else (a cookie may hold anything)", () => {
    for (const bad of ["", "0", "0/", "/1", "x/1", "0/123456789", "0/1; Path=/", "0/1\n"]) {
      expect(isLsn(bad)).toBe(false);
      expect(() => parseLsn(bad)).toThrow(/not an LSN/);
    }
    expect(isLsn("0/3001F80")).toBe(true);
  });
});

describe("isConnectionFailure", () => {
  it("is true for an unreachable or stopping server, false for other errors", () => {
    expect(isConnectionFailure(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }))).toBe(true);
    expect(isConnectionFailure(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }))).toBe(true);
    expect(isConnectionFailure(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isConnectionFailure(new Error("x", { cause: Object.assign(new Error("y"), { code: "08006" }) }))).toBe(true);
    expect(isConnectionFailure(Object.assign(new Error("canceling statement due to conflict with recovery"), { code: "40001" }))).toBe(false);
    expect(isConnectionFailure(Object.assign(new Error("relation does not exist"), { code: "42P01" }))).toBe(false);
  });
});

describe("readReplicaUrl", () => {
  it("keeps the replica's host, port, database and parameters, with the runtime role's user and password", () => {
    const url = readReplicaUrl("postgres://admin:secret@replica.internal:6432/porter?sslmode=require", "postgres://porter_app:p%40ss@primary:5432/porter");
    const parsed = new URL(url);
    expect(parsed.hostname).toBe("replica.internal");
    expect(parsed.port).toBe("6432");
    expect(parsed.pathname).toBe("/porter");
    expect(parsed.searchParams.get("sslmode")).toBe("require");
    expect(decodeURIComponent(parsed.username)).toBe("porter_app");
    expect(decodeURIComponent(parsed.password)).toBe("p@ss");
  });

  it("drops the replica URL's own user when the runtime role has no password, and handles socket URLs", () => {
    expect(readReplicaUrl("postgres://owner:pw@replica/porter", "postgres://porter_app@primary/porter")).toBe("postgres://porter_app@replica/porter");
    const socket = new URL(readReplicaUrl("postgres:///porter?host=/run/replica&user=owner", "postgres:///porter?host=/run/pg&user=porter_app&password=pw"));
    expect(socket.searchParams.get("host")).toBe("/run/replica");
    expect(socket.searchParams.get("user")).toBe("porter_app");
    expect(socket.searchParams.get("password")).toBe("pw");
  });
});

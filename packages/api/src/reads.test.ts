import type { ControlDb } from "@porter/db/prisma";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { cookieOf, createReads, READ_LSN_COOKIE, readLsnOf } from "./reads";

describe("the read LSN cookie", () => {
  it("is read from the Cookie header among others, and only when it is an LSN", () => {
    expect(cookieOf("a=1; porter_read_lsn=0%2F3001F80; b=2", READ_LSN_COOKIE)).toBe("0/3001F80");
    expect(readLsnOf(`x=y; ${READ_LSN_COOKIE}=0%2F3001F80`)).toBe("0/3001F80");
    expect(readLsnOf(`${READ_LSN_COOKIE}=0/3001F80`)).toBe("0/3001F80");
    expect(readLsnOf(`${READ_LSN_COOKIE}=drop%20table`)).toBeNull();
    expect(readLsnOf(`not_${READ_LSN_COOKIE}=0/1`)).toBeNull();
    expect(readLsnOf(null)).toBeNull();
  });
});

describe("createReads without a replica", () => {
  it("targets the primary and notes no write (no cookie)", async () => {
    const db = {} as pg.Pool;
    const prisma = {} as ControlDb;
    const resHeaders = new Headers();
    const reads = createReads({ req: new Request("http://c.test/", { headers: { cookie: `${READ_LSN_COOKIE}=0/1` } }), resHeaders, db, prisma });
    expect(await reads.target()).toEqual({ db, prisma, isReplica: false });
    await reads.noteWrite();
    expect(resHeaders.get("set-cookie")).toBeNull();
  });
});

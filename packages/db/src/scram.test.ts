import { createHash, createHmac } from "node:crypto";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { saslprep, scramVerifier } from "./scram";

// node-postgres's own SCRAM client: the verifier is right when that client's proof passes the
// check a PostgreSQL server makes against the stored verifier (RFC 5802 §3).
type Session = { clientNonce: string; response: string; serverSignature: string };
const sasl = createRequire(import.meta.url)("pg/lib/crypto/sasl.js") as {
  startSession: (mechanisms: string[]) => Session;
  continueSession: (session: Session, password: string, serverData: string) => Promise<void>;
};

/** Runs a SCRAM exchange of node-postgres's client with `password` against `verifier`, checking as the server does. */
const authenticates = async (verifier: string, password: string): Promise<boolean> => {
  const match = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier);
  if (!match) throw new Error(`not a SCRAM verifier: ${verifier}`);
  const [, iterations, salt, storedKeyB64, serverKeyB64] = match;
  const session = sasl.startSession(["SCRAM-SHA-256"]);
  const serverFirst = `r=${session.clientNonce}servernonce,s=${salt},i=${iterations}`;
  await sasl.continueSession(session, password, serverFirst);
  const proof = Buffer.from(/,p=(.+)$/.exec(session.response)![1]!, "base64");
  const withoutProof = session.response.replace(/,p=.+$/, "");
  const authMessage = `n=*,r=${session.clientNonce},${serverFirst},${withoutProof}`;
  const storedKey = Buffer.from(storedKeyB64!, "base64");
  const signature = createHmac("sha256", storedKey).update(authMessage).digest();
  const clientKey = Buffer.from(proof.map((byte, i) => byte ^ signature[i]!));
  const isClientValid = createHash("sha256").update(clientKey).digest().equals(storedKey);
  const serverSignature = createHmac("sha256", Buffer.from(serverKeyB64!, "base64")).update(authMessage).digest("base64");
  return isClientValid && serverSignature === session.serverSignature;
};

describe("scramVerifier", () => {
  it("is PostgreSQL's format with a fresh salt each time", () => {
    const a = scramVerifier("pencil");
    expect(a).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$/);
    expect(scramVerifier("pencil")).not.toBe(a);
    expect(a).not.toContain("pencil");
  });

  it("accepts node-postgres's proof for the password, and refuses another", async () => {
    for (const password of ["pencil", "p@ss:w/ord 'quoted'", "Ünïcødé\u00A0space"]) {
      const verifier = scramVerifier(password);
      expect(await authenticates(verifier, password)).toBe(true);
      expect(await authenticates(verifier, `${password}x`)).toBe(false);
    }
  });
});

describe("saslprep", () => {
  it("removes the characters RFC 3454 B.1 maps to nothing, the joiner and combining marks included, and keeps others", () => {
    const nothing = [0x00ad, 0x034f, 0x1806, 0x180b, 0x180c, 0x180d, 0x200c, 0x200d, 0x2060, 0xfeff, ...Array.from({ length: 16 }, (_, i) => 0xfe00 + i)];
    for (const code of nothing) expect(saslprep(`a${String.fromCharCode(code)}b`)).toBe("ab");
    expect(saslprep("e\u0301")).toBe("\u00E9"); // a combining accent is kept and composed (NFKC)
  });

  it("maps non-ASCII spaces to U+0020", () => {
    for (const space of ["\u00A0", "\u1680", "\u2000", "\u200A", "\u202F", "\u205F", "\u3000"]) expect(saslprep(`a${space}b`)).toBe("a b");
  });
});

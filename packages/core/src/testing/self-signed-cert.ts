// A self-signed certificate for 127.0.0.1 and localhost, for tests that run an https receiver the
// code under test must trust explicitly (webhook deliveries verify TLS; the test hands this
// certificate over as an extra CA). Made by the openssl CLI, written as cert.pem and key.pem.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export type SelfSignedCert = { certPath: string; keyPath: string; cert: string; key: string };

/** Writes `cert.pem` and `key.pem` into `dir` (created if missing), valid for `days` (default 2). */
export const writeSelfSignedCert = (dir: string, options: { days?: number } = {}): SelfSignedCert => {
  mkdirSync(dir, { recursive: true });
  const certPath = join(dir, "cert.pem");
  const keyPath = join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      keyPath,
      "-out",
      certPath,
      "-days",
      String(options.days ?? 2),
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  return { certPath, keyPath, cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8") };
};

import { describe, expect, it } from "vitest";
import { redactSecrets } from "./attempt";

describe("redactSecrets", () => {
  it("removes credentials from URLs, bearer tokens and key=value secrets", () => {
    expect(redactSecrets("connect to postgres://porter:s3cr3t@db.internal:5432/porter failed")).toBe(
      "connect to postgres://***@db.internal:5432/porter failed",
    );
    expect(redactSecrets("401 with Authorization: Bearer abcdefghijklmnop")).toBe("401 with Authorization: Bearer ***");
    expect(redactSecrets("provider said: Bearer abcdefghijklmnop expired")).toBe("provider said: Bearer *** expired");
    expect(redactSecrets('bad config {"api_key": "sk-123456", password=hunter2}')).toBe('bad config {"api_key": "***", password=***}');
  });

  it("leaves ordinary messages alone", () => {
    const message = "diag.fail: transient failure on attempt 2 (see https://status.example.com/incidents)";
    expect(redactSecrets(message)).toBe(message);
  });
});

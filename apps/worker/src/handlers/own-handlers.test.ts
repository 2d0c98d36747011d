import { defineHandler } from "@porter/sdk";
import { describe, expect, it } from "vitest";
import { defaultHandlerMap } from "./index";
import { HandlerSetupError, handlersOfModule, isHandler, replacedDemoTypes, withOwnHandlers } from "./own-handlers";

const a = defineHandler({ type: "own.a", run: async () => ({}) });
const b = defineHandler({ type: "own.b", run: async () => ({}) });

describe("handlersOfModule", () => {
  it("takes the default export, named exports and arrays; one handler under two names counts once", () => {
    expect(handlersOfModule({ default: a, a, more: [b] }, "m")).toEqual([a, b]);
  });

  it("refuses an export that is not a handler, naming it (an array's item by index), and a module with none", () => {
    expect(() => handlersOfModule({ a, options: { retries: 3 } }, "m")).toThrow(
      new HandlerSetupError(`m: export "options" is not a handler (make handlers with defineHandler from @porter/sdk)`),
    );
    expect(() => handlersOfModule({ list: [a, "b"] }, "m")).toThrow(/export "list\[1\]" is not a handler/);
    expect(() => handlersOfModule({}, "m")).toThrow("m: the module exports no handlers");
    expect(isHandler({ type: "x", run: async () => ({}) })).toBe(false);
  });
});

describe("withOwnHandlers", () => {
  it("adds the own handlers to the built-in ones, refusing two for one type and a diag.* type", () => {
    const builtIn = defaultHandlerMap();
    expect([...withOwnHandlers([a, b]).keys()]).toEqual([...builtIn.keys(), "own.a", "own.b"]);
    expect(() => withOwnHandlers([a, defineHandler({ type: "own.a", run: async () => ({}) })])).toThrow(`two handlers for job type "own.a"`);
    expect(() => withOwnHandlers([defineHandler({ type: "diag.sleep", run: async () => ({}) })])).toThrow(
      new HandlerSetupError(`job type "diag.sleep" has a built-in handler (diag.* are reserved)`),
    );
  });

  it("lets an own handler for a demo job type replace its simulated handler", () => {
    const send = defineHandler({ type: "email.send", run: async () => ({ sent: true }) });
    const map = withOwnHandlers([send]);
    expect(map.get("email.send")).toBe(send);
    expect(map.size).toBe(defaultHandlerMap().size);
    expect(replacedDemoTypes([send, a])).toEqual(["email.send"]);
  });
});

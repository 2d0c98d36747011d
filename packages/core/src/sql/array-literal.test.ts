import { describe, expect, it } from "vitest";
import { arrayLiteral, integerArray, textArray, textElement } from "./array-literal";

describe("array literals", () => {
  it("quote text elements, escape quotes and backslashes, and write null as NULL", () => {
    expect(textArray(["a", 'say "hi"', "back\\slash", null, "NULL", "", "{,}"], (v) => v)).toBe('{"a","say \\"hi\\"","back\\\\slash",NULL,"NULL","","{,}"}');
    expect(arrayLiteral([textElement("x"), 3, "NULL"])).toBe('{"x",3,NULL}');
    expect(textArray([], (v: string) => v)).toBe("{}");
  });

  it("write integers and digit strings as they are, and refuse anything else", () => {
    expect(integerArray(["1", "9007199254740993", "-4"], (v) => v)).toBe("{1,9007199254740993,-4}");
    expect(integerArray([1, 2], (v) => v)).toBe("{1,2}");
    expect(() => integerArray(["1", "2}"], (v) => v)).toThrow(TypeError);
    expect(() => integerArray([1.5], (v) => v)).toThrow(TypeError);
    expect(() => integerArray(["1,2"], (v) => v)).toThrow(TypeError);
  });
});

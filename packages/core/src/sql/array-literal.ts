// PostgreSQL array literals built here rather than by pg's parameter serializer (which runs two
// regular-expression replacements on every element and quotes even digits): the enqueue's columns
// and the worker's per-batch statements (the ack, the start marks), where pg's serializer left
// about 1 KB of garbage per job (docs/performance.md, "the worker's allocations").

/** An element of a text (or JSON-as-text) array literal: quoted, `"` and `\` escaped; NULL for null. */
export const textElement = (value: string | null): string => (value === null ? "NULL" : `"${value.replace(/["\\]/g, "\\$&")}"`);

/** An array literal of elements already made: `textElement`s, numbers, or "NULL". */
export const arrayLiteral = (elements: ReadonlyArray<string | number>): string => `{${elements.join(",")}}`;

/** A text array literal of `of(item)` for each item (null elements as NULL). */
export const textArray = <T>(items: readonly T[], of: (item: T) => string | null): string => {
  let out = "{";
  for (let i = 0; i < items.length; i++) out += (i === 0 ? "" : ",") + textElement(of(items[i]!));
  return `${out}}`;
};

/** An integer (int or bigint) array literal of `of(item)`: numbers, or digit strings as pg returns bigints. */
export const integerArray = <T>(items: readonly T[], of: (item: T) => string | number): string => {
  let out = "{";
  for (let i = 0; i < items.length; i++) {
    const value = of(items[i]!);
    if (typeof value === "number" ? !Number.isSafeInteger(value) : !DIGITS.test(value)) throw new TypeError(`not an integer: ${String(value)}`);
    out += i === 0 ? value : `,${value}`;
  }
  return `${out}}`;
};
const DIGITS = /^-?\d+$/;

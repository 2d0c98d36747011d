import { z } from "zod";

/**
 * A W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header),
 * version 00: `00-<trace id: 32 hex>-<parent span id: 16 hex>-<flags: 2 hex>`, lowercase, neither
 * id all zeros. Other versions are refused: a producer that sends them gets a 400, not a guess.
 */
export const TRACEPARENT_PATTERN = /^00-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A traceparent as the enqueue request's field (and the `traceparent` header) takes it. */
export const ZTraceparent = z
  .string()
  .regex(TRACEPARENT_PATTERN, "must be a W3C traceparent: 00-<32 hex trace id, not all 0>-<16 hex span id, not all 0>-<2 hex flags>");

/** The parts of a traceparent. */
export type TraceparentParts = { traceId: string; spanId: string; flags: number };

/** The parts of a valid traceparent, undefined for anything else. */
export const parseTraceparent = (value: string | null | undefined): TraceparentParts | undefined => {
  if (!value) return undefined;
  const m = TRACEPARENT_PATTERN.exec(value);
  return m ? { traceId: m[1]!, spanId: m[2]!, flags: Number.parseInt(m[3]!, 16) } : undefined;
};

/** The traceparent of a span context. */
export const formatTraceparent = (parts: TraceparentParts): string =>
  `00-${parts.traceId}-${parts.spanId}-${(parts.flags & 0xff).toString(16).padStart(2, "0")}`;

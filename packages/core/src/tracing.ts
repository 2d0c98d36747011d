// OpenTelemetry through @opentelemetry/api only (docs/observability.md "Traces"): no SDK is a
// dependency of Porter. Without one registered by the host every span here is the API's no-op —
// a NonRecordingSpan carrying its parent's context — so a job's stored traceparent still flows
// to its handler and logs.

import {
  type Context,
  context,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { AppError, formatTraceparent, parseTraceparent } from "@porter/contracts";

/** The instrumentation scope of Porter's spans. */
export const TRACER_NAME = "@porter/core";

/** Porter's tracer, looked up at each use: a host may register its SDK after Porter was loaded. */
export const porterTracer = (): Tracer => trace.getTracer(TRACER_NAME);

/**
 * True once a host registered an OpenTelemetry SDK (a global tracer provider): until then every
 * span is the API's no-op, and per-job paths skip making them (the worker's attempts).
 */
export const isTracingEnabled = (): boolean => {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME) !== undefined;
};

/** A remote parent context from a W3C traceparent; undefined for a missing or invalid one. */
export const contextOfTraceparent = (traceparent: string | null | undefined, base: Context = ROOT_CONTEXT): Context | undefined => {
  const parts = parseTraceparent(traceparent);
  if (!parts) return undefined;
  const spanContext: SpanContext = { traceId: parts.traceId, spanId: parts.spanId, traceFlags: parts.flags & TraceFlags.SAMPLED, isRemote: true };
  return trace.setSpanContext(base, spanContext);
};

/**
 * The parent context of a job's stored traceparent (validated at enqueue), read by position — no
 * regular expression per attempt; anything not shaped like one goes through the full parse.
 */
export const contextOfStoredTraceparent = (traceparent: string): Context => {
  if (traceparent.length !== 55 || traceparent.charCodeAt(2) !== 45 /* - */) return contextOfTraceparent(traceparent) ?? ROOT_CONTEXT;
  const flags = traceparent.charCodeAt(54) & 1 ? TraceFlags.SAMPLED : TraceFlags.NONE; // the last hex digit's low bit: sampled
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: traceparent.slice(3, 35), spanId: traceparent.slice(36, 52), traceFlags: flags, isRemote: true });
};

/** The traceparent of a span context; null for the invalid (all-zero) one. */
export const traceparentOfSpanContext = (spanContext: SpanContext): string | null =>
  trace.isSpanContextValid(spanContext) ? formatTraceparent({ traceId: spanContext.traceId, spanId: spanContext.spanId, flags: spanContext.traceFlags }) : null;

/**
 * Ends `span` with the outcome of `error`: status ERROR with the error's code (an AppError's, or a
 * `code` property) as `porter.error.code`, and the exception recorded.
 */
export const endSpanWithError = (span: Span, error: unknown, code?: string): void => {
  const errorCode =
    code ?? (error instanceof AppError ? error.code : typeof (error as { code?: unknown })?.code === "string" ? (error as { code: string }).code : "ERROR");
  span.setAttribute("porter.error.code", errorCode);
  if (error instanceof Error) span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorCode });
  span.end();
};

/** The request fields the enqueue span reads (a subset of the enqueue request). */
type Traced = { trace_id?: string; traceparent?: string };

/** The trace of a call's jobs that carry neither a traceparent nor a trace_id of their own. */
export type TraceStamp = { traceparent: string; traceId: string };

/**
 * A job's stored trace: its own traceparent (trace_id its trace id, unless given, which the
 * contract checked equal), else its own trace_id (no traceparent), else the call's stamp, else
 * none (the insert derives a trace_id from the job id).
 */
export const jobTraceOf = (input: Traced, stamp: TraceStamp | null): { traceparent: string | null; traceId: string | null } => {
  if (input.traceparent !== undefined) return { traceparent: input.traceparent, traceId: input.trace_id ?? input.traceparent.slice(3, 35) };
  if (input.trace_id !== undefined) return { traceparent: null, traceId: input.trace_id };
  return stamp ? { traceparent: stamp.traceparent, traceId: stamp.traceId } : { traceparent: null, traceId: null };
};

/** At most this many links from an enqueue span to the jobs' own traceparents. */
const MAX_LINKS = 32;

/**
 * Runs an enqueue inside its `porter.enqueue` span (kind PRODUCER), child of `traceparent` (the
 * producer's `traceparent` header) when given — or of the active context when that continues the
 * same trace already — else of the active context. `fn` gets the stamp of the jobs that carry
 * neither a traceparent nor a trace_id of their own (`jobTraceOf`): the span's context (or,
 * without an SDK, the parent's), so their attempts' spans become its children; null without any.
 * A job's own traceparent stays and is linked from the span. Nothing per job is copied.
 */
export const withEnqueueSpan = async <R>(
  inputs: readonly Traced[],
  options: { traceparent?: string; attributes?: Record<string, string | number> },
  fn: (stamp: TraceStamp | null) => Promise<R>,
): Promise<R> => {
  // The header's context, unless the active one already continues that trace (an instrumented HTTP
  // server's span, itself a child of the same header): then the enqueue span nests under it.
  const active = context.active();
  const activeTraceId = trace.getSpanContext(active)?.traceId;
  const given = parseTraceparent(options.traceparent);
  const parent = given && given.traceId !== activeTraceId ? (contextOfTraceparent(options.traceparent, active) ?? active) : active;
  const links = [...new Set(inputs.map((i) => i.traceparent).filter((t): t is string => t !== undefined))].slice(0, MAX_LINKS).flatMap((t) => {
    const ctx = contextOfTraceparent(t);
    const spanContext = ctx && trace.getSpanContext(ctx);
    return spanContext ? [{ context: spanContext }] : [];
  });
  const span = porterTracer().startSpan(
    "porter.enqueue",
    { kind: SpanKind.PRODUCER, attributes: { "porter.job_count": inputs.length, ...options.attributes }, links },
    parent,
  );
  const own = traceparentOfSpanContext(span.spanContext());
  const stamp = own ? { traceparent: own, traceId: span.spanContext().traceId } : null;
  try {
    const result = await context.with(trace.setSpan(parent, span), () => fn(stamp));
    span.end();
    return result;
  } catch (error) {
    endSpanWithError(span, error);
    throw error;
  }
};

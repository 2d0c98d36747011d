import { type Context, context, ROOT_CONTEXT, type Span, SpanKind, trace } from "@opentelemetry/api";
import {
  applyEffect,
  applyEffectStatement,
  CancelledError,
  type ClaimedJob,
  contextOfStoredTraceparent,
  endSpanWithError,
  type Failure,
  isTracingEnabled,
  type LeaseRef,
  porterTracer,
  reportThrottle,
  StaleLeaseError,
  saveCheckpoint,
  TimeoutError,
  traceparentOfSpanContext,
} from "@porter/core";
import {
  type EffectOptions,
  type EffectStatement,
  encodeCheckpoint,
  type HandlerContext,
  type Job,
  type JobTrace,
  PermanentError,
  RetryableError,
  validateProgress,
} from "@porter/sdk";
import type pg from "pg";
import type { HandlerMap } from "../handlers/handler-map";
import type { Logger } from "../logger";
import type { Completer, FlushResult } from "./completer";
import { AttemptClosedError, LeaseLostError } from "./errors";
import { buildFailure } from "./failure";
import { failureOutcome, type WorkerProbe } from "./worker-probe";

/**
 * A progress report makes the attempt's heartbeat due within this long of its last one (if it is
 * not due sooner anyway): the lease keeper's batch then carries it. At most one heartbeat batch a
 * second per worker while progress changes, however often handlers report it.
 */
export const PROGRESS_FLUSH_MS = 1000;

/** What an attempt needs from its worker. */
export type AttemptDeps = {
  db: pg.Pool;
  workerId: string;
  version: string;
  /** The worker's logger, already bound to workerId; attempts add jobId, jobType, tenantId, attempt, trace_id, span_id. */
  logger: Logger;
  handlers: HandlerMap;
  completer: Completer;
  /** How long a handler may ignore its aborted signal before the worker gives up on it. */
  hangGraceMs: number;
  /** `ctx.heartbeat()`: extends this attempt's lease now (and applies a lost lease or a cancel request). */
  heartbeat: (attempt: Attempt) => Promise<void>;
  /** Called once a retry was recorded, with the time it becomes claimable. */
  onRetryScheduled?: (runAt: Date) => void;
  /** Called once the attempt's result (ack or failure) was written or refused as stale: the job holds no RUNNING row of ours any more. */
  onResultWritten?: (job: ClaimedJob) => void;
  /** Counts outcomes by job type (in memory; the worker's metrics). */
  probe?: WorkerProbe;
  /** Called once `run()` is over and the slot is free (the worker's slots refill it). */
  onEnded?: (attempt: Attempt) => void;
};

type Handler = NonNullable<ReturnType<HandlerMap["get"]>>;

type Settlement =
  | { kind: "ok"; result: unknown }
  | { kind: "error"; error: unknown }
  /** The handler ignored its aborted signal for the hang grace: recorded as the abort reason. */
  | { kind: "abandoned"; error: Error }
  /** Lease lost or handed back: nothing is recorded. */
  | { kind: "discarded"; why: string };

/**
 * One attempt of a claimed job: validates the payload, runs the handler with its context, enforces
 * the timeout (min of `timeout_s` and the deadline) through the AbortSignal, and hands the outcome
 * to the completer. `run()` resolves when the slot may be reused: when the result is buffered, or
 * when the worker gave up on a handler that ignored its signal, or the attempt was discarded.
 * Once closed, the attempt refuses `ctx.effect` and `ctx.heartbeat`, and a late result of its
 * handler is dropped.
 */
export class Attempt {
  /** When the lease keeper should extend this lease next (epoch ms). */
  heartbeatDueAt: number;
  /** When the lease keeper last extended this lease (epoch ms; the start until then). */
  lastExtendedAt: number;
  /** The progress (its JSON) reported since the last heartbeat: the next one writes it. */
  pendingProgress: string | undefined;
  // Per-attempt objects are made on first use: a short job that never reads its signal or logs
  // costs no AbortController, child logger or pre-built error (measured: a fifth of the worker's
  // CPU per no-op job went to those and their garbage).
  private abortController: AbortController | undefined;
  private childLogger: Logger | undefined;
  /** The job's last durable checkpoint: the claim's, then each one this attempt persisted. */
  private lastCheckpoint: unknown;
  /** Checkpoint writes in call order (each waits for the previous); never rejects. Made on first use. */
  private checkpointChain: Promise<void> | undefined;
  private isCancelRequested: boolean;
  private closedWhy: string | undefined;
  /** Resolves `run()`'s wait with the first settlement; undefined before the run and once settled. */
  private resolveSettlement: ((settlement: Settlement) => void) | undefined;
  private timeoutTimer: NodeJS.Timeout | undefined;
  private hangTimer: NodeJS.Timeout | undefined;
  private readonly startedAt = Date.now();
  /** The attempt's `porter.attempt <type>` span and its context (the handler runs in it); made on first use. */
  private attemptSpan: { span: Span | undefined; context: Context | undefined; trace: JobTrace } | undefined;

  constructor(
    readonly job: ClaimedJob,
    private readonly deps: AttemptDeps,
  ) {
    this.isCancelRequested = job.cancelRequested;
    this.heartbeatDueAt = this.startedAt + (job.leaseSeconds * 1000) / 3;
    this.lastExtendedAt = this.startedAt;
    this.lastCheckpoint = job.lastCheckpoint ?? null;
  }

  /** The handler's abort signal's controller. */
  get controller(): AbortController {
    this.abortController ??= new AbortController();
    return this.abortController;
  }

  get logger(): Logger {
    const { job } = this;
    const { trace: jobTrace } = this.traced;
    this.childLogger ??= this.deps.logger.child({
      jobId: job.jobId,
      jobType: job.jobType,
      tenantId: job.tenantId,
      attempt: job.attempt,
      trace_id: jobTrace.traceId,
      ...(jobTrace.spanId ? { span_id: jobTrace.spanId } : {}),
    });
    return this.childLogger;
  }

  /**
   * The attempt's span, child of the job's stored traceparent (a root without one): a no-op span
   * carrying that parent's context unless the host registered an OpenTelemetry SDK.
   */
  private get traced(): { span: Span | undefined; context: Context | undefined; trace: JobTrace } {
    if (this.attemptSpan) return this.attemptSpan;
    const { job } = this;
    if (!isTracingEnabled()) {
      // No SDK: no span to make (it would be a no-op carrying its parent), and the stored
      // traceparent is the attempt's trace context as it is — read by position, nothing formatted.
      const hasParent = job.traceparent?.length === 55;
      const jobTrace: JobTrace = {
        traceId: hasParent ? job.traceparent!.slice(3, 35) : job.traceId,
        spanId: hasParent ? job.traceparent!.slice(36, 52) : null,
        traceparent: hasParent ? job.traceparent : null,
        parent: job.traceparent,
        isRecording: false,
      };
      this.attemptSpan = { span: undefined, context: undefined, trace: jobTrace };
      return this.attemptSpan;
    }
    const parent = job.traceparent ? contextOfStoredTraceparent(job.traceparent) : ROOT_CONTEXT;
    const span = porterTracer().startSpan(
      `porter.attempt ${job.jobType}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          "porter.job_id": job.jobId,
          "porter.job_type": job.jobType,
          "porter.queue": job.queueId,
          "porter.tenant_id": job.tenantId,
          "porter.attempt": job.attempt,
          "porter.worker_id": this.deps.workerId,
        },
      },
      parent,
    );
    const spanContext = span.spanContext();
    const traceparent = traceparentOfSpanContext(spanContext);
    const jobTrace: JobTrace = {
      traceId: traceparent ? spanContext.traceId : job.traceId,
      spanId: traceparent ? spanContext.spanId : null,
      traceparent,
      parent: job.traceparent,
      isRecording: span.isRecording(),
    };
    this.attemptSpan = { span, context: trace.setSpan(parent, span), trace: jobTrace };
    return this.attemptSpan;
  }

  /** Ends the attempt's span with its outcome (the job's next state, lowercased, or `succeeded`/`discarded`). */
  private endSpan(outcome: string, errorCode?: string): void {
    // Made at the start when tracing is on; an attempt that started without it has none.
    const span = this.attemptSpan?.span;
    if (!span) return;
    span.setAttribute("porter.outcome", outcome);
    if (errorCode === undefined) span.end();
    else endSpanWithError(span, undefined, errorCode);
  }

  /** True while the attempt may still record an outcome, run effects and heartbeat. */
  get isOpen(): boolean {
    return this.closedWhy === undefined;
  }

  get ref(): LeaseRef {
    return { id: this.job.id, leaseToken: this.job.leaseToken, attempt: this.job.attempt };
  }

  /**
   * Runs the attempt; resolves once its outcome is buffered (or discarded) and the slot is free,
   * after `deps.onEnded`. Never rejects: an error of the worker's own (not the handler's) is
   * logged as the attempt's crash.
   */
  async run(): Promise<void> {
    try {
      const settlement = await new Promise<Settlement>((resolve) => {
        this.resolveSettlement = resolve;
        this.start();
      });
      clearTimeout(this.timeoutTimer);
      clearTimeout(this.hangTimer);
      // A checkpoint the handler did not await lands before the outcome is recorded (the outcome's
      // statement would refuse it afterwards, and a failure carries the last checkpoint).
      if (this.checkpointChain && (settlement.kind === "ok" || settlement.kind === "error")) await this.checkpointChain;
      this.conclude(settlement);
    } catch (error) {
      this.deps.logger.error("attempt crashed", { err: error, jobId: this.job.jobId });
    }
    this.deps.onEnded?.(this);
  }

  /** The first settlement wins; later ones (a late result, a second abort) are dropped. */
  private settle(settlement: Settlement): void {
    const resolve = this.resolveSettlement;
    if (resolve === undefined) return;
    this.resolveSettlement = undefined;
    resolve(settlement);
  }

  /** Records the settled attempt's outcome (buffered in the completer), or logs its discarding. */
  private conclude(settlement: Settlement): void {
    if (settlement.kind === "discarded") {
      this.logger.info("attempt discarded", { why: settlement.why });
      this.endSpan("discarded");
      return;
    }
    if (settlement.kind === "abandoned") {
      this.closedWhy = "abandoned after ignoring its abort signal";
      this.logger.warn("handler ignored its abort signal; recording the attempt and freeing its slot", {
        reason: settlement.error.message,
        graceMs: this.deps.hangGraceMs,
      });
      this.recordFailure(settlement.error);
      return;
    }
    this.closedWhy = "finished";
    if (settlement.kind === "error") {
      this.recordFailure(settlement.error);
      return;
    }
    this.recordSuccess(settlement.result);
  }

  /** A cancel request (heartbeat or NOTIFY): aborts the signal with a CancelledError. */
  requestCancel(reason?: string): void {
    this.isCancelRequested = true;
    this.abort(new CancelledError(reason));
  }

  /** The database no longer holds this lease: stop the handler and record nothing. */
  loseLease(): void {
    if (!this.isOpen) return;
    this.closedWhy = "lease lost";
    this.logger.warn("lease lost; the attempt's result will be discarded");
    this.controller.abort(new LeaseLostError(this.job.jobId)); // made now if the handler has not read its signal yet
    this.settle({ kind: "discarded", why: "lease lost" });
  }

  /**
   * Drain: closes the attempt before its lease is handed back, so a result arriving meanwhile is
   * dropped. The caller aborts the signal once the hand-back is written.
   */
  closeForHandBack(): void {
    if (!this.isOpen) return;
    this.closedWhy = "handed back";
    this.settle({ kind: "discarded", why: "handed back by a draining worker" });
  }

  private start(): void {
    const { job } = this;
    const handler = this.deps.handlers.get(job.jobType);
    if (!handler) {
      const error = new PermanentError(`no handler for job type "${job.jobType}" in this worker`, { code: "NO_HANDLER" });
      this.settle({ kind: "error", error });
      return;
    }
    if (this.isCancelRequested) {
      this.settle({ kind: "error", error: new CancelledError("cancel requested before the attempt started") });
      return;
    }
    const timeoutMs = Math.min(job.timeoutS * 1000, job.deadlineAt ? job.deadlineAt.getTime() - Date.now() : Infinity);
    if (timeoutMs <= 0) {
      this.settle({ kind: "error", error: new TimeoutError(0) });
      return;
    }
    this.timeoutTimer = setTimeout(() => this.abort(new TimeoutError(Math.round(timeoutMs))), timeoutMs);
    let payload: unknown;
    try {
      payload = handler.parsePayload(job.payload);
    } catch (error) {
      this.settle({ kind: "error", error });
      return;
    }
    const view: Job<unknown> = {
      job_id: job.jobId,
      job_type: job.jobType,
      tenant_id: job.tenantId,
      payload,
      attempt: job.attempt,
      max_attempts: job.maxAttempts,
      deadline_at: job.deadlineAt,
      timeout_s: job.timeoutS,
      trace_id: job.traceId,
      idempotency_key: job.idempotencyKey,
      priority: job.priority,
    };
    // The handler runs in the attempt span's context (when an SDK made one): its own spans nest under it.
    const spanContext = isTracingEnabled() ? this.traced.context : undefined;
    if (spanContext) context.with(spanContext, () => void this.execute(handler, view));
    else void this.execute(handler, view);
  }

  /**
   * Calls the handler in a later microtask (never on the caller's stack: a handler that throws at
   * once fails its attempt as one that rejects does) and settles with its outcome. One async
   * frame, no closures.
   */
  private async execute(handler: Handler, view: Job<unknown>): Promise<void> {
    await undefined;
    let result: unknown;
    try {
      result = await handler.run(view, this.context());
    } catch (error) {
      this.settle({ kind: "error", error });
      return;
    }
    this.settle({ kind: "ok", result });
  }

  private context(): HandlerContext {
    return new AttemptContext(this);
  }

  /** `ctx.progress`: validated at once, written with the next heartbeat (due within PROGRESS_FLUSH_MS). */
  reportProgress(progress: Parameters<HandlerContext["progress"]>[0]): void {
    const json = JSON.stringify(validateProgress(progress));
    if (!this.isOpen) return;
    this.pendingProgress = json;
    this.heartbeatDueAt = Math.min(this.heartbeatDueAt, this.lastExtendedAt + PROGRESS_FLUSH_MS);
  }

  /** `ctx.checkpoint`: encoded at once (throws: nothing written), written after the previous ones. */
  checkpoint(data: unknown): Promise<void> {
    const json = encodeCheckpoint(data);
    const write = (this.checkpointChain ?? Promise.resolve()).then(() => this.writeCheckpoint(json));
    // Marks `write` handled too: a handler that does not await its checkpoint must not bring
    // the worker down with an unhandled rejection (an awaiting handler still gets it).
    this.checkpointChain = write.catch(() => undefined);
    return write;
  }

  /** `ctx.heartbeat`: extends the lease now; throws once the attempt is closed. */
  async heartbeatNow(): Promise<void> {
    this.assertOpen();
    await this.deps.heartbeat(this);
    this.assertOpen();
  }

  /** `ctx.effect` (see the SDK's HandlerContext): a lost lease found on the way closes the attempt. */
  async effect(key: string, fnOrStatement: ((tx: pg.PoolClient) => Promise<unknown>) | EffectStatement, options?: EffectOptions): Promise<unknown> {
    this.assertOpen();
    const { job, deps } = this;
    const scope = { id: job.id, jobId: job.jobId, tenantId: job.tenantId, attempt: job.attempt, leaseToken: job.leaseToken };
    try {
      if (typeof fnOrStatement !== "function") return await applyEffectStatement(deps.db, scope, key, fnOrStatement);
      const fn = fnOrStatement;
      const { result } = await applyEffect(
        deps.db,
        scope,
        key,
        async (tx) => {
          this.assertOpen();
          return fn(tx);
        },
        { txOnly: options?.txOnly === true },
      );
      return result;
    } catch (error) {
      if (error instanceof StaleLeaseError) this.loseLease();
      throw error;
    }
  }

  get workerId(): string {
    return this.deps.workerId;
  }

  /** The attempt's trace context, as `ctx.trace` gives it. */
  get jobTrace(): JobTrace {
    return this.traced.trace;
  }

  /** One fenced, synchronously committed statement; a refused one means the lease is gone. */
  private async writeCheckpoint(json: string): Promise<void> {
    this.assertOpen();
    const isSaved = await saveCheckpoint(this.deps.db, this.ref, json);
    if (!isSaved) {
      this.loseLease();
      throw new StaleLeaseError(this.job.jobId);
    }
    this.lastCheckpoint = JSON.parse(json) as unknown;
  }

  private assertOpen(): void {
    if (this.closedWhy !== undefined) throw new AttemptClosedError(this.job.jobId, this.closedWhy);
  }

  /** Aborts the signal with `reason`; a handler still running after the hang grace is given up on. */
  private abort(reason: Error): void {
    if (!this.isOpen || this.abortController?.signal.aborted) return;
    this.logger.info("aborting the attempt", { reason: reason.message });
    this.controller.abort(reason);
    this.hangTimer = setTimeout(() => this.settle({ kind: "abandoned", error: reason }), this.deps.hangGraceMs);
  }

  private recordSuccess(value: unknown): void {
    const result = value === undefined ? null : value;
    try {
      if (result !== null) JSON.stringify(result);
    } catch (error) {
      this.recordFailure(new PermanentError(`the handler's result is not JSON-serializable: ${(error as Error).message}`, { code: "RESULT_NOT_SERIALIZABLE" }));
      return;
    }
    if (this.deps.logger.isLevelEnabled("debug")) this.logger.debug("attempt succeeded", { durationMs: Date.now() - this.startedAt });
    this.endSpan("succeeded");
    this.deps.probe?.onOutcome(this.job.jobType, "succeeded");
    const completion = { id: this.job.id, leaseToken: this.job.leaseToken, attempt: this.job.attempt, result, progress: this.pendingProgress ?? null };
    this.deps.completer.ack(completion, this);
  }

  /** The completer asks (an ack's owner): the failure to record instead, the database having refused the result. */
  rejectAs(): Failure {
    return this.failure(new PermanentError("the database refused the handler's result", { code: "RESULT_REJECTED" }), new Date());
  }

  /** The completer tells (an ack's owner): the ack, or the failure recorded instead, was written, refused as stale, or given up. */
  flushed(result: FlushResult): void {
    if (result !== "dropped") this.deps.onResultWritten?.(this.job);
  }

  private recordFailure(error: unknown): void {
    const item = this.failure(error, new Date());
    const level = item.next.state === "RETRY_WAIT" || item.next.state === "CANCELLED" ? "warn" : "error";
    this.logger[level]("attempt failed", {
      code: item.error.code,
      class: item.error.class,
      message: item.error.message,
      next: item.next.state,
      durationMs: Date.now() - this.startedAt,
    });
    this.endSpan(item.next.state.toLowerCase(), item.error.code);
    const { next } = item;
    this.deps.probe?.onOutcome(this.job.jobType, failureOutcome(next.state));
    if (error instanceof RetryableError && error.isThrottle && this.job.resourceKeyId) {
      // The provider behind the resource key said "slow down": slow the key down for everyone.
      const resourceKeyId = this.job.resourceKeyId;
      void reportThrottle(this.deps.db, { resourceKeyId, retryAfterMs: error.retryAfterMs })
        .then((state) => this.logger.warn("resource key throttled", { resourceKeyId, ...state }))
        .catch((e: unknown) => this.logger.warn("could not record a throttle", { err: e, resourceKeyId }));
    }
    void this.deps.completer.fail(item).then((flushed) => {
      if (flushed === "applied" && next.state === "RETRY_WAIT") this.deps.onRetryScheduled?.(next.runAt);
      if (flushed !== "dropped") this.deps.onResultWritten?.(this.job);
    });
  }

  /** The failure record of this attempt: classified, decided, with its structured error. */
  private failure(error: unknown, now: Date): Failure {
    const failure = buildFailure({
      job: this.job,
      error,
      abortReason: this.abortController?.signal.aborted ? this.abortController.signal.reason : undefined,
      cancelRequested: this.isCancelRequested,
      version: this.deps.version,
      lastCheckpoint: this.lastCheckpoint,
      now,
    });
    // A progress report no heartbeat carried yet is recorded with the outcome.
    return { ...failure, progress: this.pendingProgress ?? null };
  }
}

/**
 * A handler's `ctx`. Its members are read through accessors on the prototype, so an attempt costs
 * one object however many members its handler uses: the signal, the logger and the trace are made
 * on first read, and each function is bound to the attempt on first read — a handler may pass it
 * on or destructure it (`const { effect, signal } = ctx`). Spreading ctx (`{ ...ctx }`) copies
 * only its own fields (attempt, workerId, lastCheckpoint): pass ctx itself instead.
 * (As an object literal with getters and closures it was a sixth of the worker's allocations per
 * job: docs/performance.md, "the worker's allocations".)
 */
class AttemptContext implements HandlerContext {
  readonly attempt: number;
  readonly workerId: string;
  readonly lastCheckpoint: unknown;
  readonly #owner: Attempt;
  #progress: HandlerContext["progress"] | undefined;
  #checkpoint: HandlerContext["checkpoint"] | undefined;
  #heartbeat: HandlerContext["heartbeat"] | undefined;
  #effect: HandlerContext["effect"] | undefined;

  constructor(owner: Attempt) {
    this.#owner = owner;
    this.attempt = owner.job.attempt;
    this.workerId = owner.workerId;
    this.lastCheckpoint = owner.job.lastCheckpoint ?? null;
  }

  get signal(): AbortSignal {
    return this.#owner.controller.signal;
  }

  get logger(): Logger {
    return this.#owner.logger;
  }

  get trace(): JobTrace {
    return this.#owner.jobTrace;
  }

  get progress(): HandlerContext["progress"] {
    const owner = this.#owner;
    this.#progress ??= (progress) => owner.reportProgress(progress);
    return this.#progress;
  }

  get checkpoint(): HandlerContext["checkpoint"] {
    const owner = this.#owner;
    this.#checkpoint ??= (data) => owner.checkpoint(data);
    return this.#checkpoint;
  }

  get heartbeat(): HandlerContext["heartbeat"] {
    const owner = this.#owner;
    this.#heartbeat ??= () => owner.heartbeatNow();
    return this.#heartbeat;
  }

  get effect(): HandlerContext["effect"] {
    const owner = this.#owner;
    this.#effect ??= ((key: string, fnOrStatement: ((tx: pg.PoolClient) => Promise<unknown>) | EffectStatement, options?: EffectOptions) =>
      owner.effect(key, fnOrStatement, options)) as HandlerContext["effect"];
    return this.#effect;
  }
}

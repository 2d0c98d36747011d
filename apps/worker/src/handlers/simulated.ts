import { type AnyHandler, defineHandler, type HandlerContext, type Job, RetryableError } from "@porter/sdk";
import { z } from "zod";
import { sleepFor } from "./sleep";

const ZRef = z.string().min(1).max(2048);
const ZVersion = z.union([z.string().max(200), z.number()]).optional();

/**
 * A payload of references: the refs a type knows are typed when present, extra fields are allowed,
 * and at least one `*_ref` string must be there (payloads carry references, never bytes).
 */
const refsPayload = <S extends z.ZodRawShape>(shape: S) =>
  z
    .looseObject({ ...shape, version: ZVersion, hash: z.string().max(200).optional() })
    .refine((p) => Object.entries(p).some(([k, v]) => k.endsWith("_ref") && typeof v === "string" && v.length > 0), {
      message: "the payload must carry at least one reference (a *_ref string field)",
    });

/** How a simulated job type behaves: latency range and how often its dependency fails. */
type Profile = {
  latencyMs: readonly [number, number];
  /** Probability of a transient failure of the dependency (a 5xx, a timeout). */
  transientRate: number;
  /** Probability of a provider 429 with a Retry-After. */
  rateLimitRate: number;
  /** Name of the dependency, for messages. */
  dependency: string;
};

const between = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));

/** Work of one simulated step: waits a realistic latency, honouring the signal, then maybe fails like the real dependency would. */
const simulate = async (profile: Profile, ctx: HandlerContext, stage: string): Promise<void> => {
  await sleepFor(between(...profile.latencyMs), ctx.signal);
  const roll = Math.random();
  if (roll < profile.rateLimitRate) {
    const retryAfterMs = between(500, 3000);
    throw new RetryableError(`${profile.dependency} answered 429 Too Many Requests during ${stage}`, {
      code: "RATE_LIMITED",
      retryAfterMs,
      isThrottle: true,
    });
  }
  if (roll < profile.rateLimitRate + profile.transientRate) {
    throw new RetryableError(`${profile.dependency} was unavailable during ${stage}`, { code: "DEPENDENCY_UNAVAILABLE" });
  }
  await ctx.checkpoint({ stage });
};

const artifact = (job: Job<unknown>, kind: string) => `artifact://${job.tenant_id}/${kind}/${job.job_id}`;

export const documentParse = defineHandler({
  type: "document.parse",
  payload: refsPayload({ source_ref: ZRef.optional(), document_ref: ZRef.optional() }),
  run: async (job, ctx) => {
    const profile: Profile = { latencyMs: [150, 800], transientRate: 0.03, rateLimitRate: 0, dependency: "the document store" };
    await simulate(profile, ctx, "parse");
    return { artifact_ref: artifact(job, "parsed"), pages: between(1, 40), source_ref: job.payload.source_ref ?? job.payload.document_ref ?? null };
  },
});

export const embedChunks = defineHandler({
  type: "embed.chunks",
  payload: refsPayload({ artifact_ref: ZRef.optional(), source_ref: ZRef.optional(), chunk_count: z.number().int().min(0).optional() }),
  run: async (job, ctx) => {
    const profile: Profile = { latencyMs: [80, 400], transientRate: 0.02, rateLimitRate: 0.02, dependency: "the embedding provider" };
    await simulate(profile, ctx, "embed");
    return { index_ref: artifact(job, "embeddings"), vectors: job.payload.chunk_count ?? between(4, 64) };
  },
});

export const emailSend = defineHandler({
  type: "email.send",
  payload: refsPayload({ template_ref: ZRef.optional(), recipient_ref: ZRef.optional(), message_ref: ZRef.optional() }),
  run: async (job, ctx) => {
    const profile: Profile = { latencyMs: [20, 150], transientRate: 0.02, rateLimitRate: 0.01, dependency: "the mail provider" };
    await simulate(profile, ctx, "send");
    return { provider_message_ref: `msg://${job.job_id}` };
  },
});

export const emailCampaign = defineHandler({
  type: "email.campaign",
  payload: refsPayload({ campaign_ref: ZRef.optional(), list_ref: ZRef.optional(), template_ref: ZRef.optional() }),
  run: async (job, ctx) => {
    const profile: Profile = { latencyMs: [100, 400], transientRate: 0.02, rateLimitRate: 0.01, dependency: "the mail provider" };
    await simulate(profile, ctx, "render");
    await simulate(profile, ctx, "fan-out");
    return { batch_ref: artifact(job, "campaign-batch"), recipients: between(50, 5000) };
  },
});

export const agentRun = defineHandler({
  type: "agent.run",
  payload: refsPayload({ agent_ref: ZRef.optional(), input_ref: ZRef.optional(), conversation_ref: ZRef.optional() }),
  run: async (job, ctx) => {
    const profile: Profile = { latencyMs: [200, 800], transientRate: 0.02, rateLimitRate: 0.03, dependency: "the LLM provider" };
    const steps = between(1, 3);
    for (let step = 1; step <= steps; step++) await simulate(profile, ctx, `llm call ${step}/${steps}`);
    return { output_ref: artifact(job, "agent-output"), llm_calls: steps };
  },
});

export const webhookDeliver = defineHandler({
  type: "webhook.deliver",
  payload: refsPayload({ endpoint_ref: ZRef.optional(), event_ref: ZRef.optional(), url_ref: ZRef.optional() }),
  run: async (job, ctx) => {
    const profile: Profile = { latencyMs: [20, 200], transientRate: 0.04, rateLimitRate: 0.01, dependency: "the subscriber endpoint" };
    await simulate(profile, ctx, "deliver");
    return { delivered: true, status: 200, attempt: job.attempt };
  },
});

export const harvesterSync = defineHandler({
  type: "harvester.sync",
  payload: refsPayload({ source_ref: ZRef.optional(), connector_ref: ZRef.optional(), cursor: z.string().max(500).optional() }),
  run: async (job, ctx) => {
    const profile: Profile = { latencyMs: [100, 350], transientRate: 0.03, rateLimitRate: 0.01, dependency: "the source system" };
    await simulate(profile, ctx, "list changes");
    await simulate(profile, ctx, "fetch");
    return { snapshot_ref: artifact(job, "snapshot"), items: between(0, 500), cursor: `c-${Date.now()}` };
  },
});

/** Simulated handlers of the demo job types: realistic latency and occasional transient failures. */
export const simulatedHandlers: AnyHandler[] = [documentParse, embedChunks, emailSend, emailCampaign, agentRun, webhookDeliver, harvesterSync];

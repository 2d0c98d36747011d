"use client";
import { ZJobTypeCreate, ZJobTypeFields } from "@porter/api/schemas/control-plane";
import { createDefaults, JOB_TYPE } from "@porter/contracts/control-plane";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { entityFields } from "../../../components/config-form";
import { ConfigPage, orNone } from "../../../components/config-page";
import { useTRPC } from "../../../lib/trpc";

export function JobTypesView() {
  const trpc = useTRPC();
  const list = useQuery(trpc.jobTypes.list.queryOptions());
  const queues = useQuery(trpc.queues.list.queryOptions());
  return (
    <ConfigPage
      title="Job types"
      noun="job type"
      intro="The registry: a job type decides its queue (producers cannot choose one), the payload schema version handlers expect, and optionally its own timeout."
      query={list}
      fields={entityFields(JOB_TYPE, { overrides: { queue_id: { options: (queues.data ?? []).map((q) => ({ value: q.id, label: q.id })) } } })}
      createSchema={ZJobTypeCreate}
      editSchema={ZJobTypeFields}
      defaults={{ ...createDefaults(JOB_TYPE), queue_id: queues.data?.[0]?.id ?? "" }}
      create={trpc.jobTypes.create.mutationOptions()}
      update={trpc.jobTypes.update.mutationOptions()}
      refreshes={[trpc.jobTypes]}
      columns={[
        { header: "Job type", cell: (t) => <Link href={`/jobs?type=${encodeURIComponent(t.id)}`}>{t.id}</Link> },
        { header: "Queue", cell: (t) => t.queue_id },
        { header: "Schema version", cell: (t) => t.payload_schema_version },
        { header: "Timeout", cell: (t) => orNone(t.timeout_s, " s") },
        { header: "Description", cell: (t) => t.description || "—", isWrapping: true },
      ]}
    />
  );
}

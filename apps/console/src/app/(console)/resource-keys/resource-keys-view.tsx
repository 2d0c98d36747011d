"use client";
import { ZResourceKeyCreate, ZResourceKeyFields } from "@porter/api/schemas/control-plane";
import { createDefaults, RESOURCE_KEY } from "@porter/contracts/control-plane";
import { useQuery } from "@tanstack/react-query";
import { entityFields } from "../../../components/config-form";
import { ConfigPage, orNone } from "../../../components/config-page";
import { dateTime } from "../../../lib/format";
import { useTRPC } from "../../../lib/trpc";

export function ResourceKeysView() {
  const trpc = useTRPC();
  const list = useQuery(trpc.resourceKeys.list.queryOptions());
  return (
    <ConfigPage
      title="Resource keys"
      noun="resource key"
      intro="Shared, scarce resources (an LLM provider, OCR, a database) limited across queues and pools. Queues name the key they use."
      query={list}
      fields={entityFields(RESOURCE_KEY)}
      defaults={createDefaults(RESOURCE_KEY)}
      createSchema={ZResourceKeyCreate}
      editSchema={ZResourceKeyFields}
      create={trpc.resourceKeys.create.mutationOptions()}
      update={trpc.resourceKeys.update.mutationOptions()}
      refreshes={[trpc.resourceKeys]}
      columns={[
        { header: "Key", cell: (k) => k.id },
        { header: "Description", cell: (k) => k.description || "—", isWrapping: true },
        { header: "Concurrency", cell: (k) => orNone(k.concurrency_limit), isNumeric: true },
        { header: "Rate", cell: (k) => orNone(k.rate_per_second, "/s"), isNumeric: true },
        { header: "Burst", cell: (k) => orNone(k.burst), isNumeric: true },
        {
          header: "Adaptive limit now",
          cell: (k) => (k.current_limit === null ? "—" : `${k.current_limit}${k.throttled_until ? ` until ${dateTime(k.throttled_until)}` : ""}`),
        },
      ]}
    />
  );
}

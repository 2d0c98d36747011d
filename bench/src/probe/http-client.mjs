// Probe client (not part of the suite): POSTs producer.enqueue calls with plain fetch.
//   node http-client.mjs <server url> <api key> <calls> <concurrency>
const [url, key, calls, conc] = process.argv.slice(2);
let k = 1_000_000 + Math.floor(Math.random() * 1e6) * 1000;
let left = Number(calls);
const t0 = performance.now();
await Promise.all(
  Array.from({ length: Number(conc) }, async () => {
    while (left-- > 0) {
      k++;
      const r = await fetch(`${url}/api/trpc/producer.enqueue`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify({ job_type: "bench.job", payload: { k }, idempotency_key: `c-${k}` }),
      });
      if (!r.ok) throw new Error(await r.text());
      await r.text();
    }
  }),
);
console.log(`client: ${(Number(calls) / ((performance.now() - t0) / 1000)).toFixed(0)}/s`);

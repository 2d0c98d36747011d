/**
 * Whether `npm start`'s server (serve.ts) answers a request with the producer API's node handler
 * rather than Next: `/api/trpc/producer.<procedure>`, or a batch of producer procedures only
 * (`/api/trpc/producer.enqueue,producer.enqueue?batch=1`, the SDK's joined enqueues). A batch with
 * any other procedure in it, and every other path, is Next's.
 */
export const isProducerCall = (url: string): boolean => {
  const q = url.indexOf("?");
  const pathname = q === -1 ? url : url.slice(0, q);
  if (!pathname.startsWith("/api/trpc/")) return false;
  return pathname
    .slice("/api/trpc/".length)
    .split(",")
    .every((path) => path.startsWith("producer."));
};

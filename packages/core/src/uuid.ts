import { randomFillSync } from "node:crypto";

const POOL_SIZE = 16 * 1024;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Public job ids are v7 so
 * that their unique indexes grow at the right edge (insert locality, like a sequence) instead of
 * scattering writes over the whole btree as random v4 ids do. Randomness is drawn from a pooled
 * buffer: one `randomFillSync` per 1 600 ids.
 */
export const uuidv7 = (now = Date.now()): string => {
  if (offset + 10 > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const r = pool.subarray(offset, offset + 10);
  offset += 10;
  const ms = now.toString(16).padStart(12, "0");
  const variantByte = (r[2]! & 0x3f) | 0x80;
  return (
    `${ms.slice(0, 8)}-${ms.slice(8, 12)}-7${HEX[r[0]!]!.slice(1)}${HEX[r[1]!]}-`
    + `${HEX[variantByte]}${HEX[r[3]!]}-${HEX[r[4]!]}${HEX[r[5]!]}${HEX[r[6]!]}${HEX[r[7]!]}${HEX[r[8]!]}${HEX[r[9]!]}`
  );
};

import { createHmac, timingSafeEqual } from "node:crypto";

// The tenant status page's cookie (issue 13): `<link id>.<HMAC-SHA256(link id)>` keyed with a key
// derived from AUTH_SECRET, HttpOnly, SameSite=Lax, Secure over https, Path=/status/<tenant_id>.
// It holds the link id, not the token: the token is never stored or sent again after the first
// visit, and the id is re-checked against tenant_status_links on every request (statusLinkById),
// so revoking or expiring the link ends the cookie's access at once. The HMAC only stops a
// client from presenting another link's id.

export const STATUS_COOKIE = "porter_status";

const mac = (secret: string, linkId: string) =>
  createHmac("sha256", createHmac("sha256", secret).update("porter status link cookie v1").digest()).update(linkId).digest("base64url");

/** The signed cookie value for a link id. */
export const signStatusCookie = (secret: string, linkId: string): string => `${linkId}.${mac(secret, linkId)}`;

/** The link id of a cookie value whose signature verifies, else null. */
export const verifyStatusCookie = (secret: string, value: string | undefined): string | null => {
  if (!value) return null;
  const dot = value.lastIndexOf(".");
  if (dot <= 0) return null;
  const linkId = value.slice(0, dot);
  const expected = Buffer.from(mac(secret, linkId));
  const actual = Buffer.from(value.slice(dot + 1));
  return expected.length === actual.length && timingSafeEqual(expected, actual) ? linkId : null;
};

/**
 * The Set-Cookie header of a followed link: scoped to that tenant's pages, gone when the link
 * expires. SameSite=Lax, except for a tenant that embeds its page (`isEmbeddable`: it lists
 * status_origins) served over https: a frame on the tenant's own site is a cross-site context, where
 * browsers neither set nor send a Lax cookie, so that cookie is `SameSite=None; Secure; Partitioned`
 * (CHIPS: kept in the embedding site's partition, so it survives third-party cookie blocking and is
 * no tracker). The pages are read-only GETs, so a cross-site cookie opens no CSRF.
 */
export const statusCookieHeader = (params: {
  secret: string;
  linkId: string;
  tenantId: string;
  expiresAt: Date;
  isSecure: boolean;
  isEmbeddable?: boolean;
}): string =>
  [
    `${STATUS_COOKIE}=${signStatusCookie(params.secret, params.linkId)}`,
    `Path=/status/${encodeURIComponent(params.tenantId)}`,
    `Expires=${params.expiresAt.toUTCString()}`,
    "HttpOnly",
    ...(params.isSecure && params.isEmbeddable ? ["SameSite=None", "Secure", "Partitioned"] : ["SameSite=Lax", ...(params.isSecure ? ["Secure"] : [])]),
  ].join("; ");

/**
 * Names a Responses request after its disaggregated request id (seed #21602), so the reply id
 * ties back to the proxy's and both workers' logs and metrics for the same request.
 */
import type { JsonObject } from "../json/json.ts";

const HEX16 = /^[0-9a-f]{16}$/;

function random16Hex(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * `resp_<disagg_request_id>_<16 hex>`. The random part keeps the name unique should a
 * disaggregated request id ever repeat (ids restart with the process).
 */
export function responseIdFor(disaggRequestId: bigint, random16hex: string = random16Hex()): string {
  if (!HEX16.test(random16hex)) throw new RangeError(`Cannot name a response with "${random16hex}": expected 16 lowercase hex digits`);
  return `resp_${disaggRequestId}_${random16hex}`;
}

/**
 * Sets the body's `request_id`, under which both workers answer, unless the client set one.
 * Call it once, when the disaggregated request id is assigned: a retried context request
 * keeps the first name because a set `request_id` is never replaced.
 * Returns the name the workers will answer under, or undefined when the client's
 * `request_id` is not a string (the workers reject it, so nothing can be named after it).
 */
export function nameResponsesRequest(body: JsonObject, disaggRequestId: bigint): string | undefined {
  const current = body["request_id"];
  if (typeof current === "string") return current;
  // A worker treats an explicit null as unset, so it is ours to fill in.
  if (current !== undefined && current !== null) return undefined;
  const name = responseIdFor(disaggRequestId);
  body["request_id"] = name;
  return name;
}

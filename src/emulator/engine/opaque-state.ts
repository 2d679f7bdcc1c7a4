/**
 * The emulator's `encoded_opaque_state`: where a real engine puts its KV-transfer descriptor,
 * the context worker puts base64 of a small JSON blob. The generation worker decodes it to
 * check that the proxy carried the context answer through untouched and to the right request.
 */

import { isJsonObject, jsonInteger, parseJson, readInteger } from "../../json/json.ts";

export interface OpaqueState {
  /** URL of the context worker that produced it. */
  readonly worker: string;
  readonly disaggRequestId: bigint | undefined;
  readonly promptTokens: number;
  /** The prompt's `[[emu …]]` blocks, for a generation request whose prompt is token ids only. */
  readonly directives: string;
}

const MARKER = "emulated-kv-state";

export function encodeOpaqueState(state: OpaqueState): string {
  const blob = {
    kind: MARKER,
    worker: state.worker,
    disagg_request_id: state.disaggRequestId === undefined ? null : jsonInteger(state.disaggRequestId),
    prompt_tokens: state.promptTokens,
    directives: state.directives,
  };
  return Buffer.from(JSON.stringify(blob)).toString("base64");
}

/** Returns undefined when the text is not an emulator opaque state. */
export function decodeOpaqueState(encoded: string): OpaqueState | undefined {
  let blob;
  try {
    blob = parseJson(Buffer.from(encoded, "base64").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!isJsonObject(blob) || blob["kind"] !== MARKER) return undefined;
  const { worker, prompt_tokens: promptTokens, directives } = blob;
  if (typeof worker !== "string" || typeof promptTokens !== "number" || typeof directives !== "string") return undefined;
  return { worker, disaggRequestId: readInteger(blob["disagg_request_id"]), promptTokens, directives };
}

/** SSE serialisation shared by the dialects and the emulated worker. */

const encoder = new TextEncoder();

/** One `data:` event (OpenAI chat/completions style). */
export function encodeData(data: string): Uint8Array {
  return encoder.encode(`data: ${data}\n\n`);
}

/** One named event: `event: <type>\ndata: <json>\n\n`. */
export function encodeEvent(event: string, data: string): Uint8Array {
  if (/[\r\n]/.test(event)) throw new SyntaxError(`Cannot encode SSE event name "${event}": it holds a line break`);
  return encoder.encode(`event: ${event}\ndata: ${data}\n\n`);
}

/** A comment line, invisible to SSE clients: used as a keepalive. */
export function encodeComment(text: string): Uint8Array {
  return encoder.encode(`: ${text}\n\n`);
}

export const DONE_EVENT: Uint8Array = encodeData("[DONE]");

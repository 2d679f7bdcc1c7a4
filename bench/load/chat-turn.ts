/**
 * One streamed chat request on a keep-alive connection, read event by event: when the first
 * content token arrived (the first `choices[0].delta.content` that is not empty), the answer's
 * text, and the usage of the final chunk (`stream_options.include_usage`).
 */

import { isJsonObject, parseJson, type JsonValue } from "../../src/json/json.ts";
import type { HttpConnection } from "../http/connection.ts";

export interface TurnAnswer {
  readonly status: number;
  /** Request written → first content token, ms; undefined when none came. */
  readonly ttftMs: number | undefined;
  /** Request written → response complete, ms. */
  readonly totalMs: number;
  readonly content: string;
  readonly promptTokens: number | undefined;
  readonly cachedTokens: number | undefined;
  /** The stream ended with `data: [DONE]`. */
  readonly done: boolean;
}

export function chatTurn(conn: HttpConnection, request: Uint8Array): Promise<TurnAnswer> {
  return new Promise((resolve, reject) => {
    const decoder = new TextDecoder();
    const reader = new EventReader();
    let status = 0;
    const sentAt = performance.now();
    conn.send(request, {
      head(code) {
        status = code;
      },
      body(bytes) {
        reader.push(decoder.decode(bytes, { stream: true }), performance.now() - sentAt);
      },
      end() {
        reader.push(`${decoder.decode()}\n\n`, performance.now() - sentAt);
        resolve({ status, totalMs: performance.now() - sentAt, ...reader.summary() });
      },
      failed: reject,
    });
  });
}

/** SSE events (blank-line separated `data:` lines) as they arrive. */
class EventReader {
  #pending = "";
  #ttftMs: number | undefined;
  #content = "";
  #promptTokens: number | undefined;
  #cachedTokens: number | undefined;
  #done = false;

  push(text: string, elapsedMs: number): void {
    this.#pending += text;
    let end = this.#pending.indexOf("\n\n");
    while (end >= 0) {
      this.#event(this.#pending.slice(0, end), elapsedMs);
      this.#pending = this.#pending.slice(end + 2);
      end = this.#pending.indexOf("\n\n");
    }
  }

  summary(): Omit<TurnAnswer, "status" | "totalMs"> {
    return {
      ttftMs: this.#ttftMs,
      content: this.#content,
      promptTokens: this.#promptTokens,
      cachedTokens: this.#cachedTokens,
      done: this.#done,
    };
  }

  #event(event: string, elapsedMs: number): void {
    const data = event
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (data === "") return;
    if (data === "[DONE]") {
      this.#done = true;
      return;
    }
    const chunk = parseJson(data);
    const content = at(at(at(at(chunk, "choices"), 0), "delta"), "content");
    if (typeof content === "string" && content !== "") {
      this.#ttftMs ??= elapsedMs;
      this.#content += content;
    }
    const usage = at(chunk, "usage");
    const prompt = at(usage, "prompt_tokens");
    const cached = at(at(usage, "prompt_tokens_details"), "cached_tokens");
    if (typeof prompt === "number") this.#promptTokens = prompt;
    if (typeof prompt === "number") this.#cachedTokens = typeof cached === "number" ? cached : 0;
  }
}

function at(value: JsonValue | undefined, key: string | number): JsonValue | undefined {
  if (typeof key === "number") return Array.isArray(value) ? value[key] : undefined;
  return isJsonObject(value) ? value[key] : undefined;
}

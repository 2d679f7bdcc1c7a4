/**
 * The Anthropic event state machine over parsed OpenAI chat chunks (reference §3.5.3):
 *
 *   message_start (content_block_start content_block_delta* content_block_stop)* message_delta message_stop
 *
 * Exactly one block is open at a time and indices grow from 0. Upstream may interleave the
 * argument fragments of parallel tool calls; the call owning the open block streams live and
 * every other call's fragments wait in its own buffer until it gets a block, so each call's
 * partial_json concatenates to exactly what upstream sent for it.
 */
import type { JsonObject } from "../json/json.ts";
import { type ChatChunk, convertUsage, mapStop, type StopResult, stopFieldsOf, type ToolCallDelta, withToolUse } from "./anthropic-chat.ts";
import type { AnthropicIds } from "./anthropic-ids.ts";
import { anthropicErrorBody } from "./anthropic-response.ts";

export interface AnthropicEvent extends JsonObject {
  readonly type: string;
}

type BlockType = "text" | "thinking" | "tool_use";
type ChunkChoice = NonNullable<ChatChunk["choices"]>[number];

interface ToolCallState {
  readonly key: string;
  id: string;
  name: string | undefined;
  /** Fragments that arrived while another block was open. */
  pending: string[];
  started: boolean;
}

export class AnthropicReframer {
  readonly #ids: AnthropicIds;
  #model: string;
  #messageStarted = false;
  #index = -1;
  #open: BlockType | undefined;
  #openToolKey: string | undefined;
  // Insertion order is the order buffered calls get their blocks in.
  readonly #tools = new Map<string, ToolCallState>();
  #lastToolKey: string | undefined;
  #unindexedCalls = 0;
  #emittedToolUse = false;
  #stop: StopResult = { stopReason: "end_turn", stopSequence: undefined };
  #usage: JsonObject | undefined;

  constructor(ids: AnthropicIds, model = "") {
    this.#ids = ids;
    this.#model = model;
  }

  /** Events for one chat chunk; the first chunk also opens the message. */
  chunk(chunk: ChatChunk): AnthropicEvent[] {
    const out: AnthropicEvent[] = [];
    if (!this.#messageStarted && chunk.model) this.#model = chunk.model;
    if (chunk.usage) this.#usage = convertUsage(chunk.usage);
    this.#startMessage(out);
    for (const choice of chunk.choices ?? []) this.#choice(choice, out);
    return out;
  }

  /** Events that end the message cleanly, on upstream `[DONE]`. */
  finish(): AnthropicEvent[] {
    const out: AnthropicEvent[] = [];
    this.#startMessage(out);
    // Runs before the stop reason is decided: a buffered call still makes this a tool_use turn.
    this.#flushPendingToolCalls(out);
    this.#closeBlock(out);
    const stop = withToolUse(this.#stop, this.#emittedToolUse);
    const usage = this.#usage ?? { input_tokens: 0, output_tokens: 0 };
    out.push({ type: "message_delta", delta: stopFieldsOf(stop), usage }, { type: "message_stop" });
    return out;
  }

  /** Events that end the message with an error: the open block is closed, no message_stop. */
  error(status: number, message: string): AnthropicEvent[] {
    const out: AnthropicEvent[] = [];
    this.#closeBlock(out);
    out.push({ ...anthropicErrorBody(status, message), type: "error" });
    return out;
  }

  #startMessage(out: AnthropicEvent[]): void {
    if (this.#messageStarted) return;
    this.#messageStarted = true;
    const usage: JsonObject = { input_tokens: this.#usage?.["input_tokens"] ?? 0, output_tokens: 0 };
    const cached = this.#usage?.["cache_read_input_tokens"];
    if (cached !== undefined) usage["cache_read_input_tokens"] = cached;
    const message = {
      id: this.#ids.newMessageId(),
      type: "message",
      role: "assistant",
      model: this.#model,
      content: [],
      usage,
    };
    out.push({ type: "message_start", message });
  }

  #choice(choice: ChunkChoice, out: AnthropicEvent[]): void {
    const delta = choice.delta;
    const reasoning = delta?.reasoning_content || delta?.reasoning;
    if (reasoning) {
      this.#ensureBlock("thinking", out);
      this.#delta({ type: "thinking_delta", thinking: reasoning }, out);
    }
    if (delta?.content) {
      this.#ensureBlock("text", out);
      this.#delta({ type: "text_delta", text: delta.content }, out);
    }
    for (const call of delta?.tool_calls ?? []) this.#toolCall(call, out);
    if (choice.finish_reason) this.#stop = mapStop(choice.finish_reason, choice.stop_reason);
  }

  #delta(delta: JsonObject, out: AnthropicEvent[]): void {
    out.push({ type: "content_block_delta", index: this.#index, delta });
  }

  #closeBlock(out: AnthropicEvent[]): void {
    if (this.#open === undefined) return;
    out.push({ type: "content_block_stop", index: this.#index });
    this.#open = undefined;
    this.#openToolKey = undefined;
  }

  #openBlock(block: JsonObject & { type: BlockType }, out: AnthropicEvent[]): void {
    this.#closeBlock(out);
    this.#index += 1;
    this.#open = block.type;
    out.push({ type: "content_block_start", index: this.#index, content_block: block });
  }

  #ensureBlock(type: "text" | "thinking", out: AnthropicEvent[]): void {
    if (this.#open === type) return;
    // Once another block opens, a buffered call can no longer stream into its own: give every
    // waiting call its block first.
    this.#flushPendingToolCalls(out);
    this.#openBlock(type === "text" ? { type, text: "" } : { type, thinking: "" }, out);
  }

  #toolCall(call: ToolCallDelta, out: AnthropicEvent[]): void {
    if (!call.function) return;
    const state = this.#toolState(call);
    if (state === undefined) return;
    // Nothing else streams tool arguments: this call takes the open block at once.
    if (!state.started && state.name && this.#open !== "tool_use") this.#openToolBlock(state, out);
    const fragment = call.function.arguments;
    if (!fragment) return;
    if (state.key === this.#openToolKey) this.#delta({ type: "input_json_delta", partial_json: fragment }, out);
    else state.pending.push(fragment);
  }

  /** The record of the call a fragment belongs to, created on first sight. */
  #toolState(call: ToolCallDelta): ToolCallState | undefined {
    const name = call.function?.name || undefined;
    const key = this.#toolKey(call.index, name);
    if (key === undefined) return undefined; // neither index nor name nor a known call: unattributable
    const known = this.#tools.get(key);
    if (known === undefined) {
      const state = { key, id: call.id || this.#ids.newToolUseId(), name, pending: [], started: false };
      this.#tools.set(key, state);
      this.#lastToolKey = key;
      return state;
    }
    // Some producers repeat id and name on every fragment; late values only fill gaps, and
    // never after the block start announced them.
    if (!known.started) {
      known.name ??= name;
      if (call.id) known.id = call.id;
    }
    return known;
  }

  #toolKey(index: number | null | undefined, name: string | undefined): string | undefined {
    if (typeof index === "number") return `index:${index}`;
    // Without an index, a name is the only sign of a new call; unnamed fragments belong to
    // the call streaming now, or else to the latest one.
    if (name !== undefined) return `unindexed:${++this.#unindexedCalls}`;
    return this.#openToolKey ?? this.#lastToolKey;
  }

  #openToolBlock(state: ToolCallState, out: AnthropicEvent[]): void {
    this.#openBlock({ type: "tool_use", id: state.id, name: state.name ?? "", input: {} }, out);
    this.#openToolKey = state.key;
    this.#emittedToolUse = true;
    state.started = true;
    for (const fragment of state.pending) this.#delta({ type: "input_json_delta", partial_json: fragment }, out);
    state.pending = [];
  }

  #flushPendingToolCalls(out: AnthropicEvent[]): void {
    for (const state of this.#tools.values()) {
      // The open call's fragments stream live, so it never has any waiting.
      if (state.key === this.#openToolKey || (state.started && state.pending.length === 0)) continue;
      // A tool_use block must name its tool: arguments of a call never named are dropped.
      if (!state.name) state.pending = [];
      // A call resumed after its block closed gets a second block under the same id:
      // truncated arguments handed over silently would be worse.
      else this.#openToolBlock(state, out);
    }
  }
}

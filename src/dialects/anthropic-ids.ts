/** Ids the Anthropic dialect mints: `msg_<32 hex>` and `toolu_<32 hex>`, as the API writes them. */

export interface AnthropicIds {
  readonly newMessageId: () => string;
  readonly newToolUseId: () => string;
}

function hex32(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** Random ids for production; tests pass counters instead to get stable output. */
export const randomAnthropicIds: AnthropicIds = Object.freeze({
  newMessageId: () => `msg_${hex32()}`,
  newToolUseId: () => `toolu_${hex32()}`,
});

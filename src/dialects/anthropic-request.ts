/**
 * Anthropic Messages request → OpenAI chat request (reference §3.5.1). The result holds only
 * chat fields: workers reject unknown fields, so nothing of the Anthropic body passes through.
 */
import { badRequest } from "../errors.ts";
import { isJsonObject, type JsonObject } from "../json/json.ts";
import { randomAnthropicIds } from "./anthropic-ids.ts";
import { convertMessages } from "./anthropic-messages.ts";
import { type AnthropicTool, type AnthropicToolChoice, CountTokensRequest, MessagesRequest, validate } from "./anthropic-request-schema.ts";

// Tools Anthropic runs on its side: nothing here can execute them.
const SERVER_TOOL_PREFIXES = ["web_search", "web_fetch", "code_execution", "tool_search_tool_", "advisor_", "mcp_toolset"];
// Anthropic-defined tools the client runs, whose schema is built into Anthropic's API.
const SCHEMA_CLIENT_TOOL_PREFIXES = ["bash_", "text_editor_", "computer_", "memory_"];

// Both names, because the adapter cannot know which one the model's template reads:
// GLM templates read clear_thinking, DeepSeek-V4 reads drop_thinking.
const KEEP_ALL_THINKING: JsonObject = { clear_thinking: false, drop_thinking: false };

function hasTypePrefix(tool: AnthropicTool, prefixes: readonly string[]): boolean {
  const type = tool.type;
  return typeof type === "string" && type !== "custom" && prefixes.some((prefix) => type.startsWith(prefix));
}

function convertTool(tool: AnthropicTool): JsonObject {
  if (tool.input_schema === null || tool.input_schema === undefined) {
    if (hasTypePrefix(tool, SCHEMA_CLIENT_TOOL_PREFIXES)) {
      throw badRequest(
        `Anthropic schema client tool '${tool.name}' (type='${tool.type}') is recognized, but its built-in input schema is not implemented by this server`,
      );
    }
    throw badRequest(`Client tool '${tool.name}' requires input_schema`);
  }
  const fn: JsonObject = { name: tool.name };
  if (typeof tool.description === "string") fn["description"] = tool.description;
  fn["parameters"] = tool.input_schema;
  if (typeof tool.strict === "boolean") fn["strict"] = tool.strict;
  return { type: "function", function: fn };
}

function convertTools(request: MessagesRequest): JsonObject[] | undefined {
  // tool_choice "none" forbids calling a tool, not knowing one: client tools stay in the
  // prompt (a later tool_result stays interpretable and the KV prefix stable), and a server
  // tool, which could never be called anyway, is dropped instead of refused.
  const forbidsCalls = request.tool_choice?.type === "none";
  const tools: JsonObject[] = [];
  for (const tool of request.tools ?? []) {
    if (!hasTypePrefix(tool, SERVER_TOOL_PREFIXES)) tools.push(convertTool(tool));
    else if (!forbidsCalls) {
      throw badRequest(`Anthropic server tool '${tool.name}' (type='${tool.type}') is not supported by this server`);
    }
  }
  return tools.length > 0 ? tools : undefined;
}

function convertToolChoice(choice: AnthropicToolChoice | null | undefined, tools: JsonObject[] | undefined): string | undefined {
  if (choice === null || choice === undefined) return tools === undefined ? undefined : "auto";
  if (choice.disable_parallel_tool_use === true && choice.type !== "none") {
    throw badRequest("tool_choice.disable_parallel_tool_use=true is not supported");
  }
  if (choice.type === "none") return "none";
  if (tools === undefined) {
    throw badRequest(
      `tool_choice type '${choice.type}' requires at least one client-executable tool; all provided tools were server tools or the tools list was empty`,
    );
  }
  if (choice.type === "auto") return "auto";
  // The chat pipeline cannot force a call: it would emit one without parsed arguments.
  if (choice.type === "any") {
    throw badRequest("Anthropic tool_choice type 'any' is not supported because the chat pipeline cannot require an arbitrary tool call");
  }
  if (!choice.name) throw badRequest("tool_choice type 'tool' requires a 'name'");
  if (!tools.some((tool) => isJsonObject(tool["function"]) && tool["function"]["name"] === choice.name)) {
    throw badRequest(`tool_choice names unknown tool '${choice.name}'`);
  }
  throw badRequest(
    "Anthropic tool_choice type 'tool' is not supported because the chat pipeline emits a forced call without parsed arguments; use tool_choice 'auto' and describe the required tool in the prompt",
  );
}

function applyThinking(request: MessagesRequest, chat: JsonObject, kwargs: JsonObject): void {
  const thinking = request.thinking;
  if (thinking === null || thinking === undefined) return;
  kwargs["enable_thinking"] = thinking.type !== "disabled";
  if (thinking.type !== "enabled") return;
  if (thinking.budget_tokens >= request.max_tokens) throw badRequest("thinking budget_tokens must be less than max_tokens");
  chat["thinking_token_budget"] = thinking.budget_tokens;
}

function applyOutputConfig(config: JsonObject | null | undefined, chat: JsonObject, kwargs: JsonObject): void {
  if (config === null || config === undefined) return;
  const effort = config["effort"];
  if (typeof effort === "string" && effort !== "") kwargs["reasoning_effort"] = effort;
  const format = config["format"];
  if (format === null || format === undefined) return;
  if (!isJsonObject(format)) throw badRequest("output_config.format must be an object");
  if (format["type"] !== "json_schema") throw badRequest("Only output_config.format type 'json_schema' is supported");
  const schema = format["schema"];
  if (!isJsonObject(schema)) throw badRequest("output_config.format.schema must be an object");
  chat["response_format"] = { type: "json_schema", json_schema: { schema } };
}

/**
 * Templates prune earlier-turn reasoning by default; a `keep: "all"` clear_thinking edit says
 * not to. Other retention policies keep the template default: dropping more than asked is the
 * safer mistake than keeping more.
 */
function thinkingRetention(contextManagement: JsonObject | null | undefined): JsonObject {
  const edits = contextManagement?.["edits"];
  if (!Array.isArray(edits)) return {};
  const keepsAll = edits.some(
    (edit) =>
      isJsonObject(edit) &&
      typeof edit["type"] === "string" &&
      edit["type"].startsWith("clear_thinking") && // dated suffix, e.g. clear_thinking_20251015
      edit["keep"] === "all",
  );
  return keepsAll ? { ...KEEP_ALL_THINKING } : {};
}

function copySampling(request: MessagesRequest, chat: JsonObject): void {
  for (const key of ["temperature", "top_p", "top_k"] as const) {
    const value = request[key];
    if (typeof value === "number") chat[key] = value;
  }
  if (request.stop_sequences && request.stop_sequences.length > 0) chat["stop"] = [...request.stop_sequences];
}

function convert(request: MessagesRequest, newToolUseId: () => string): JsonObject {
  const messages = convertMessages(request, newToolUseId);
  // Only empty content arrays and no system prompt: the model would be asked nothing.
  if (messages.length === 0) throw badRequest("messages must not be empty");
  const tools = convertTools(request);
  const toolChoice = convertToolChoice(request.tool_choice, tools);
  const stream = request.stream === true;
  const chat: JsonObject = { model: request.model, messages, max_completion_tokens: request.max_tokens, stream };
  if (tools !== undefined) chat["tools"] = tools;
  if (toolChoice !== undefined) chat["tool_choice"] = toolChoice;
  copySampling(request, chat);
  const kwargs: JsonObject = {};
  applyThinking(request, chat, kwargs);
  applyOutputConfig(request.output_config, chat, kwargs);
  Object.assign(kwargs, thinkingRetention(request.context_management));
  if (Object.keys(kwargs).length > 0) {
    chat["chat_template_kwargs"] = kwargs;
    // Every key was derived from an Anthropic field, so the worker's unused-kwargs guard must
    // not reject the one a given template does not read.
    chat["injected_chat_template_kwargs"] = Object.keys(kwargs).toSorted();
  }
  if (stream) chat["stream_options"] = { include_usage: true, continuous_usage_stats: true };
  return chat;
}

/** Validates an Anthropic Messages body and converts it; throws a 400 ProxyError when invalid. */
export function toChatRequest(body: unknown, newToolUseId: () => string = randomAnthropicIds.newToolUseId): JsonObject {
  return convert(validate(MessagesRequest, body), newToolUseId);
}

/**
 * The chat request whose prompt a count_tokens body describes. It goes through the same
 * converter so the count matches the prompt the real request builds; max_tokens only has to
 * clear the thinking budget so that a request the Messages route accepts is countable.
 */
export function toCountTokensRequest(body: unknown, newToolUseId: () => string = randomAnthropicIds.newToolUseId): JsonObject {
  const request = validate(CountTokensRequest, body);
  const thinking = request.thinking;
  const maxTokens = thinking?.type === "enabled" ? thinking.budget_tokens + 1 : 1;
  const { model, messages, system, tools, tool_choice, output_config, context_management } = request;
  const prompt = { model, messages, system, tools, tool_choice, thinking, output_config, context_management };
  return convert({ ...prompt, max_tokens: maxTokens }, newToolUseId);
}

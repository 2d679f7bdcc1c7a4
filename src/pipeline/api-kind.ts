/** The worker APIs the pipeline disaggregates. Anthropic Messages rides on "chat". */
export type ApiKind = "completions" | "chat" | "responses";

export const WORKER_PATH: Record<ApiKind, string> = {
  completions: "/v1/completions",
  chat: "/v1/chat/completions",
  responses: "/v1/responses",
};

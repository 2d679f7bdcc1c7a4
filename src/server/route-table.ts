import { clusterInfo, health, livez, metrics, models, perfMetrics, version } from "../routes/info.ts";
import { anthropicErrorResponse, countTokens, messages } from "../routes/messages.ts";
import { chatCompletions, completions } from "../routes/openai.ts";
import { responses } from "../routes/responses.ts";
import type { RouteTable } from "./dispatch.ts";

export const ROUTES: RouteTable = {
  "/v1/completions": { methods: { POST: completions } },
  "/v1/chat/completions": { methods: { POST: chatCompletions } },
  "/v1/responses": { methods: { POST: responses } },
  "/v1/messages": { methods: { POST: messages }, renderError: anthropicErrorResponse },
  "/v1/messages/count_tokens": { methods: { POST: countTokens }, renderError: anthropicErrorResponse },
  "/v1/models": { methods: { GET: models } },
  "/health": { methods: { GET: health }, access: "open" },
  "/livez": { methods: { GET: livez }, access: "open" },
  "/version": { methods: { GET: version }, access: "open" },
  "/cluster_info": { methods: { GET: clusterInfo } },
  "/perf_metrics": { methods: { GET: perfMetrics } },
  "/prometheus/metrics": { methods: { GET: metrics }, access: "metrics" },
  "/metrics": { methods: { GET: metrics }, access: "metrics" },
};

/** For the config tests: the one-line message parseTrtllmYaml refuses a YAML with. */

import { ConfigError } from "./errors.ts";
import { parseTrtllmYaml } from "./trtllm-yaml.ts";

export function errorOf(yaml: string): string {
  try {
    parseTrtllmYaml(yaml, "disagg_config.yaml");
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

/** What one row of the option table (cli-options.ts) says of a flag. */

export type Section = "serve" | "coordinator" | "worker" | "demo" | "global";

/** How a flag's text becomes a value: `seconds` takes seconds (floats ok) and yields ms. */
export type ValueKind = "string" | "int" | "number" | "seconds" | "enum" | "urls" | "list" | "flag";

export interface OptionSpec {
  readonly section: Section;
  /** Long name, without `--`. */
  readonly name: string;
  readonly short?: string;
  /**
   * Other long names accepted for the same option: trtllm-serve's spellings
   * (`--config_file`, `--log_level`, …; tensorrt_llm/commands/serve.py @ 00209af1, `disaggregated`).
   */
  readonly spellings?: readonly string[];
  /** Property of the parsed values (for serve: the ProxyConfig field it overrides). */
  readonly key: string;
  readonly kind: ValueKind;
  /** Placeholder in the usage text. */
  readonly arg?: string;
  readonly choices?: readonly string[];
  /** Spellings of other tools (trtllm-serve's `-l warning`) accepted for a choice. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** Choices match whatever their case (`-s GENERATION_FIRST`). */
  readonly caseInsensitive?: boolean;
  readonly min?: number;
  readonly max?: number;
  readonly repeatable?: boolean;
  readonly required?: boolean;
  /** Shown in help and docs/configuration.md only: serve defaults are applied after the YAML, in load.ts. */
  readonly default?: string;
  readonly description: string;
}

/** The value of a --port option: 0 (a free port) to 65535, read into `port`. */
export const PORT_VALUE = { name: "port", key: "port", kind: "int", arg: "PORT", min: 0, max: 65_535 } as const;

export const ROUTERS = ["round_robin", "load_balancing", "conversation", "kv_cache_aware"] as const;

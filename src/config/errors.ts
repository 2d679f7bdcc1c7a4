/**
 * Start-up errors. main.ts turns both into exit code 2 and prints only the message
 * (never a stack): the user made a mistake, the program did not.
 */

/** The config file or the merged settings are wrong. The message names the key. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** The command line is wrong. main.ts prints the message and where help is, in one line. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  /** Usage text of the command the user tried, so the hint fits what they typed. */
  readonly usage: string;
  /** The command line that prints that usage (`disagg-proxy worker --help`). */
  readonly help: string;

  constructor(message: string, usage = "", help = "disagg-proxy --help") {
    super(message);
    this.usage = usage;
    this.help = help;
  }
}

/** The `Invalid config: <key> must be <what>` wording shared by the YAML reader and load.ts. */
export function invalidConfig(key: string, expectation: string): ConfigError {
  return new ConfigError(`Invalid config: ${key} must be ${expectation}`);
}

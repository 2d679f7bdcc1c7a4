/** `coordinator` flags beside serve's (which it takes too: the same config names the workers and routers). */

import type { OptionSpec } from "../option-spec.ts";

export const COORDINATOR_OPTIONS = [
  {
    section: "coordinator",
    name: "reservation-timeout",
    key: "reservationTimeoutMs",
    kind: "seconds",
    arg: "S",
    default: "180",
    description:
      "Seconds a placement lives without its /finish before it is released as failed, so a serving process that died leaks nothing (TRTLLM_DISAGG_COORDINATOR_RESERVATION_TIMEOUT sets it too)",
  },
] as const satisfies readonly OptionSpec[];

import { Context } from "effect"
import type { Principal } from "./run.ts"

/**
 * The principal whose request starts runs: the HTTP layer provides it with the caller
 * (src/http/api/security.ts provideKey), and the run store writes it to `runs.api_key_id`.
 * Undefined for work no request started (a schedule's firing, a monitor's tick).
 */
export const RunStartedBy = Context.Reference<Principal | undefined>("wa/store/RunStartedBy", { defaultValue: () => undefined })

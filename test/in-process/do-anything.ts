/** Small helpers of the in-process DoAnything tests: requests and sessions through the Sessions service. */
import { Effect } from "effect"
import type { DoAnythingRequest } from "../../src/domain/run.ts"
import { Sessions } from "../../src/do-anything/service.ts"
import { Tenant } from "./harness.ts"

/** A DoAnything request; keep_alive false unless the test keeps the session. */
export const doAnything = (fields: Omit<DoAnythingRequest, "_tag">): DoAnythingRequest => ({
  _tag: "DoAnything",
  keep_alive: false,
  ...fields
})

/** A new session with its first run, as POST .../sessions makes it. */
export const createSession = (fields: Omit<DoAnythingRequest, "_tag">) =>
  Effect.gen(function*() {
    const tenant = yield* Tenant
    const sessions = yield* Sessions
    return yield* sessions.create({ projectId: tenant.projectId, keyId: tenant.keyId }, doAnything(fields))
  })

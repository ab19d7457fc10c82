/** Handlers of project-level settings. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { ApiKeys } from "../../auth/api-keys.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { requireFreshScope } from "./api-keys.ts"

export const ProjectHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "project",
  Effect.fn(function*(handlers) {
    const sql = yield* SqlClient.SqlClient
    const keys = yield* ApiKeys
    return handlers.handle("webhookSecret", () =>
      Effect.gen(function*() {
        // The secret lets its holder forge callbacks: admin keys only, checked against the database.
        yield* requireFreshScope(keys, "admin")
        const { projectId } = yield* CurrentKey
        const [row] = yield* sql<{ webhook_secret: string }>`SELECT webhook_secret FROM projects WHERE id = ${projectId}`.pipe(Effect.orDie)
        return { secret: row!.webhook_secret }
      }))
  })
)

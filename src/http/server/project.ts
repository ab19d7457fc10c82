/** Handlers of project-level settings. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Projects } from "../../auth/projects.ts"
import { ApiKeys } from "../../auth/api-keys.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { requireFreshScope } from "./api-keys.ts"

export const ProjectHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "project",
  Effect.fn(function*(handlers) {
    const projects = yield* Projects
    const keys = yield* ApiKeys
    return handlers.handle("webhookSecret", () =>
      Effect.gen(function*() {
        // The secret lets its holder forge callbacks: admin keys only, checked against the database.
        yield* requireFreshScope(keys, "admin")
        const { projectId } = yield* CurrentKey
        const secret = yield* projects.webhookSecret(projectId)
        // The key was just checked against the database, so its project exists.
        return { secret: secret! }
      }))
  })
)

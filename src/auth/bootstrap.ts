/**
 * First start on an empty database: create a default project and an API key and print them once,
 * so `npm start` is enough to make the first authenticated call.
 */
import { Effect, Layer } from "effect"
import { ApiKeys } from "./api-keys.ts"
import { Projects } from "./projects.ts"

export const BootstrapLive = Layer.effectDiscard(Effect.gen(function*() {
  const projects = yield* Projects
  const keys = yield* ApiKeys
  // Several nodes may start at once on one database; the lock lets exactly one of them bootstrap.
  const created = yield* projects.whenNone(Effect.gen(function*() {
    const project = yield* projects.create("default")
    // The operator's first key: it must be able to create the others.
    const { row, secret } = yield* keys.create(project.id, "default", { scope: "admin", createdByKeyId: null })
    return { project_id: project.id, key_id: row.id, secret_token: secret }
  }))
  if (created !== undefined) {
    yield* Effect.logWarning("created the default project and an API key; the key is shown only this once").pipe(
      Effect.annotateLogs({ bootstrap: created })
    )
  }
}))

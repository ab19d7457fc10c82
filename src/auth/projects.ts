/** Projects: the unit an API key is scoped to. Their SQL is the store's (src/auth/project-store.ts). */
import { Context, Effect, Layer } from "effect"
import { ProjectStore, type ProjectRow } from "./project-store.ts"
import type { ProjectId } from "../domain/run.ts"
import { withMethodSpans } from "../observability/spans.ts"

export type { ProjectRow } from "./project-store.ts"

export class Projects extends Context.Service<Projects, {
  readonly create: (name: string) => Effect.Effect<ProjectRow>
  readonly find: (id: ProjectId) => Effect.Effect<ProjectRow | undefined>
  readonly count: Effect.Effect<number>
  /** The secret that signs the project's callbacks (GET /v1/projects/{pid}/webhook_secret, admin keys). */
  readonly webhookSecret: (id: ProjectId) => Effect.Effect<string | undefined>
  /**
   * `make` on a database with no project yet, else undefined: under the first start's lock, in one
   * transaction, so of several nodes starting at once exactly one makes it.
   */
  readonly whenNone: <A, E, R>(make: Effect.Effect<A, E, R>) => Effect.Effect<A | undefined, E, R>
}>()("wa/auth/Projects") {
  static readonly layer = Layer.effect(
    Projects,
    Effect.gen(function*() {
      const store = yield* ProjectStore
      return Projects.of(withMethodSpans("Projects", {
        create: store.insert,
        find: store.find,
        count: store.count,
        webhookSecret: store.webhookSecret,
        whenNone: (make) =>
          store.withBootstrapLock(Effect.gen(function*() {
            if ((yield* store.count) > 0) return undefined
            return yield* make
          }))
      }))
    })
  ).pipe(Layer.provide(ProjectStore.layer))
}

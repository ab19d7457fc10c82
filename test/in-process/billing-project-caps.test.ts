/**
 * Plan caps per project (src/billing/plans.ts), in-process with the real RunStore, ApiKeys and
 * Plans: concurrent creates cannot pass them.
 *
 * - open sessions per project: 30 concurrent creates by 3 keys (5 each allowed) against a
 *   project cap of 7 give 7; the refusals say scope `project` (429 too_many_concurrent_sessions);
 * - a console user (whose id names no api_keys row) is held to its cap the same way;
 * - API keys per project: 20 concurrent creates against a cap of 5 (one key exists) give 4
 *   (403 plan_limit_reached); a revoked key frees its place;
 * - the caps come from the plan table with the env overrides (capsOf).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Exit, Layer, References } from "effect"
import { ApiKeys } from "../../src/auth/api-keys.ts"
import { Projects } from "../../src/auth/projects.ts"
import { Plans } from "../../src/billing/plans.ts"
import { AppConfig } from "../../src/config/config.ts"
import type { ProjectId } from "../../src/domain/run.ts"
import { UserId } from "../../src/domain/id-schemas.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/runs.ts"
import { SessionStore } from "../../src/store/sessions.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("caps")
  const dataDir = yield* freshDataDir("wa-caps")
  return AppConfig.layerFrom({
    DATABASE_URL: url,
    WA_DATA_DIR: dataDir,
    WA_LOG_LEVEL: "Warn",
    WA_MAX_CONCURRENT_SESSIONS: "5",
    WA_MAX_SESSIONS_PER_PROJECT: "7",
    WA_MAX_KEYS_PER_PROJECT: "5"
  })
}))

const TestLayer = Layer.mergeAll(RunStore.layer, SessionStore.layer, ApiKeys.layer, Plans.layer, Projects.layer).pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  Layer.provideMerge(ConfigLive)
)

/** A session's first run, as the DoAnything service makes it. */
const newRun = {
  instructions: "x",
  request: { _tag: "DoAnything", instructions: "x", keep_alive: true, agentmail: true, skills: [], allowed_actions: [] } as never,
  maxSteps: 5,
  model: null,
  maxDurationMs: null
}

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("plan caps per project", (it) => {
  it.effect("open sessions: 30 concurrent creates by 3 keys against a project cap of 7 give 7", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const plans = yield* Plans
      const keys = yield* ApiKeys
      const project = yield* Projects.use((projects) => projects.create("caps-sessions"))
      const projectId = project.id as ProjectId
      const caps = yield* plans.capsFor(projectId)
      expect(caps).toMatchObject({ concurrency: 5, projectSessions: 7, projectKeys: 5 })
      const keyIds = yield* Effect.forEach([1, 2, 3], (i) => keys.create(projectId, `k${i}`, { scope: "run", createdByKeyId: null }).pipe(Effect.map((k) => k.row.id)))
      const exits = yield* Effect.all(Array.from({ length: 30 }, (_, i) =>
        Effect.exit(store.createSession({
          projectId,
          apiKeyId: keyIds[i % 3]!,
          profileId: null,
          workspaceId: null,
          maxOpenSessions: caps.concurrency,
          maxProjectSessions: caps.projectSessions,
          run: newRun
        }))), { concurrency: "unbounded" })
      expect(exits.filter(Exit.isSuccess)).toHaveLength(7)
      const refusals = exits.filter(Exit.isFailure).map((exit) => String(exit.cause))
      for (const refusal of refusals) expect(refusal).toContain("SessionCapReached")
    }))

  it.effect("a console user's open sessions (no api_keys row): 20 concurrent creates against a cap of 5 give 5", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const project = yield* Projects.use((projects) => projects.create("caps-console-user"))
      const exits = yield* Effect.all(Array.from({ length: 20 }, () =>
        Effect.exit(store.createSession({
          projectId: project.id as ProjectId,
          apiKeyId: UserId.make("usr_console_person"),
          profileId: null,
          workspaceId: null,
          maxOpenSessions: 5,
          run: newRun
        }))), { concurrency: "unbounded" })
      expect(exits.filter(Exit.isSuccess)).toHaveLength(5)
      for (const exit of exits.filter(Exit.isFailure)) expect(String(exit.cause)).toContain("SessionCapReached")
    }))

  it.effect("API keys: 20 concurrent creates against a cap of 5 with one key give 4; a revoked key frees a place", () =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys
      const project = yield* Projects.use((projects) => projects.create("caps-keys"))
      const first = yield* keys.create(project.id, "first", { scope: "admin", createdByKeyId: null })
      const exits = yield* Effect.all(Array.from({ length: 20 }, (_, i) =>
        Effect.exit(keys.createWithinPlan(project.id, `k${i}`, { scope: "run", createdByKeyId: null }, 5))), { concurrency: "unbounded" })
      expect(exits.filter(Exit.isSuccess)).toHaveLength(4)
      for (const exit of exits.filter(Exit.isFailure)) expect(String(exit.cause)).toContain("PlanLimitReached")
      expect(yield* keys.count(project.id)).toBe(5)
      yield* keys.revoke(project.id, first.row.id)
      const again = yield* Effect.exit(keys.createWithinPlan(project.id, "after revoke", { scope: "run", createdByKeyId: null }, 5))
      expect(Exit.isSuccess(again)).toBe(true)
    }))
})

/**
 * The in-process tier: the real DoAnything services in the test's own process, built as one Layer.
 *
 * - AppConfig from a record (no environment leaks in).
 * - The database: a fresh database of this file on the tier's one embedded PostgreSQL
 *   (global-setup.ts), reached through DATABASE_URL, with the migrations applied by the real
 *   `databaseLayer`. Dropped when the layer closes.
 * - The real RunStore, RunEventBus, ScreenshotStore, Callbacks and RunNotifier, the Sessions
 *   service and the Session entity, on the cluster's `TestRunner` (in-memory message and runner
 *   storage) instead of the SQL runner.
 * - The real BrowserPool on the system Chromium.
 * - The model: the real OpenAI-compatible provider (AgentModel.layer) pointed at the loopback
 *   scripted model server, so the provider's request and response handling is exercised too.
 *   It works under TestClock as well: the server is node:http and the provider's fetch does not
 *   wait on the Effect clock, so the clock-driven tests use it unchanged.
 * - The fixture web site.
 *
 * The composition follows `ProductServices` in src/main.ts, narrowed to DoAnything (no research,
 * search or web search entities: nothing here would use them, and they would only add start-up).
 *
 * Use it with `layer(inProcess(), { excludeTestServices: true })` for tests on the live clock, or
 * with `layer(inProcess())` to build the whole stack under the TestClock the tests adjust (the
 * Session entity's timers, the run's max_duration and the entity's idle timeout then follow
 * `TestClock.adjust`: the entity runs with the clock of Sharding, see deadlines.test.ts).
 */
import { Context, Effect, Layer, References } from "effect"
import type { ApiKeyId, ProjectId } from "../../src/domain/run.ts"
import { TestRunner } from "effect/cluster"
import { AgentModel } from "../../src/agent/model.ts"
import { ApiKeys } from "../../src/auth/api-keys.ts"
import { Projects } from "../../src/auth/projects.ts"
import { BrowserPool } from "../../src/browser/pool.ts"
import { RunnerLifecycle } from "../../src/cluster/lifecycle.ts"
import { AppConfig } from "../../src/config/config.ts"
import { SessionEntityLive } from "../../src/do-anything/executor.ts"
import { Sessions } from "../../src/do-anything/service.ts"
import { Schedules } from "../../src/schedules/schedules.ts"
import { SessionSchedules } from "../../src/do-anything/schedules.ts"
import { RunEventBus } from "../../src/events/run-event-bus.ts"
import { callbackView } from "../../src/http/views/callback-view.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/runs.ts"
import { SessionStore } from "../../src/store/sessions.ts"
import { ScreenshotStore } from "../../src/store/screenshots.ts"
import { WorkspaceStore } from "../../src/store/workspace-store.ts"
import { TakeControl } from "../../src/control/take-control.ts"
import { Callbacks } from "../../src/webhooks/callbacks.ts"
import { RunNotifier } from "../../src/webhooks/run-notifier.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"

/** The loopback servers of the file: the fixture site, the scripted model, its database URL. */
export class Fixtures extends Context.Service<Fixtures, {
  readonly site: FixtureSites
  readonly model: ScriptedModel
  readonly databaseUrl: string
  readonly dataDir: string
}>()("test/in-process/Fixtures") {}

/** A project and an API key of the file's database, for the services that need one. */
export class Tenant extends Context.Service<Tenant, {
  readonly projectId: ProjectId
  readonly keyId: ApiKeyId
}>()("test/in-process/Tenant") {}


const FixturesLive = Layer.effect(
  Fixtures,
  Effect.gen(function*() {
    const site = yield* Effect.acquireRelease(Effect.promise(() => startFixtureSites()), (s) => Effect.promise(() => s.close()))
    const model = yield* Effect.acquireRelease(
      Effect.promise(() => startScriptedModel(() => ({ text: "no script" }))),
      (m) => Effect.promise(() => m.close())
    )
    const databaseUrl = yield* freshDatabase()
    const dataDir = yield* freshDataDir("wa-in-process-data")
    return Fixtures.of({ site, model, databaseUrl, dataDir })
  })
)

const TenantLive = Layer.effect(
  Tenant,
  Effect.gen(function*() {
    const project = yield* Projects.use((projects) => projects.create("in-process"))
    const key = yield* ApiKeys.use((keys) => keys.create(project.id, "in-process", { scope: "admin", createdByKeyId: null }))
    return Tenant.of({ projectId: project.id, keyId: key.row.id })
  })
)

/** The settings of the tier; `env` overrides or adds WA_* variables for one file (undefined removes one). */
const configLayer = (env: Record<string, string | undefined>) =>
  Layer.unwrap(Effect.map(Fixtures, (fixtures) =>
    AppConfig.layerFrom({
      DATABASE_URL: fixtures.databaseUrl,
      WA_DATA_DIR: fixtures.dataDir,
      WA_MODEL_BASE_URL: fixtures.model.baseUrl,
      WA_MODEL: "scripted",
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      // No CPU weight for the browser in tests: see testCpuWeight in test/support/service.ts.
      WA_BROWSER_CPU_WEIGHT: "off",
      WA_MAX_CONCURRENT_SESSIONS: "100",
      CHROMIUM_PATH: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium",
      WA_BROWSER: "system",
      WA_LOG_LEVEL: "Warn",
      ...env
    })
  ))

/** The DoAnything stack in-process (see the module comment). */
export const inProcess = (env: Record<string, string | undefined> = {}) =>
  Layer.mergeAll(Sessions.layer, TenantLive).pipe(
    Layer.provideMerge(SessionSchedules.layer),
    Layer.provideMerge(SessionEntityLive),
    Layer.provideMerge(RunNotifier.layer(callbackView)),
    Layer.provideMerge(TakeControl.layer),
    Layer.provideMerge(Layer.mergeAll(
      RunStore.layer,
      SessionStore.layer,
      RunEventBus.layer,
      ScreenshotStore.layer,
      WorkspaceStore.layer,
      AgentModel.layer,
      BrowserPool.layerFromAppConfig,
      Callbacks.layer,
      Schedules.layer,
      Projects.layer,
      ApiKeys.layer
    )),
    Layer.provideMerge(TestRunner.layer),
    Layer.provideMerge(RunnerLifecycle.layer),
    Layer.provideMerge(databaseLayer("own")),
    // Warnings and errors only: an entity's "session run failed" still shows.
    Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
    Layer.provideMerge(configLayer(env)),
    Layer.provideMerge(FixturesLive)
  )

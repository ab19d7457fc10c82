/**
 * The `wa` command: `serve` (default: API + cluster runner + embedded database), `runner` (a
 * cluster runner without the API: /healthz, /readyz and /metrics only; needs DATABASE_URL), `migrate`,
 * `projects create --name N`, `keys create --project P [--name N] [--scope admin|run]` (admin by default:
 * the operator runs it), `credits grant --project P --usd N [--bucket additional|monthly]` (src/billing/ledger.ts),
 * `plans list`, `plans set --project P --plan ID`, `plans unset --project P` (src/billing/plans.ts).
 * `budget set --project P --usd N|none` and `budget show --project P` (src/billing/budget.ts).
 * `users create --email E --password-stdin [--name N] [--tenant T] [--role admin|member]` (src/accounts/).
 * Commands other than `serve`
 * print one JSON document on stdout and work whether or not the service runs on the same data dir.
 * Client commands (`run`, `research`, `search`, `monitors`, `mcp`) talk to a service over its API:
 * src/cli/client.ts.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, Option, References } from "effect"
import { ApiKeys, apiKeyScopes, type ApiKeyScope } from "./auth/api-keys.ts"
import { BootstrapLive } from "./auth/bootstrap.ts"
import { Projects } from "./auth/projects.ts"
import { AgentModel } from "./agent/model.ts"
import { BrowserPool } from "./browser/pool.ts"
import { ClusterLive } from "./cluster/cluster.ts"
import { DrainLive, RunnerLifecycle } from "./cluster/lifecycle.ts"
import { RunnerHttpLive } from "./cluster/runner-http.ts"
import { ResearchEntityLive } from "./entities/research.ts"
import { SessionEntityLive } from "./entities/session.ts"
import { StartupRecoveryLive } from "./entities/startup-recovery.ts"
import { RunEventBus } from "./events/run-event-bus.ts"
import { RunStore } from "./store/runs.ts"
import { ScreenshotStore } from "./store/screenshots.ts"
import { ArtifactStore } from "./store/artifacts.ts"
import { WorkspaceStore } from "./workspaces/workspace-store.ts"
import { TakeControl } from "./control/take-control.ts"
import { Reader } from "./reader/reader.ts"
import { ReaderBrowser } from "./reader/reader-browser.ts"
import { WebSearch } from "./search/web-search.ts"
import { Search } from "./search/search.ts"
import { Research } from "./research/research.ts"
import { Sessions } from "./entities/sessions.ts"
import { WebSearchEntityLive } from "./entities/web-search.ts"
import { Callbacks } from "./webhooks/callbacks.ts"
import { RunNotifier } from "./webhooks/run-notifier.ts"
import { NotificationChannelsLive } from "./webhooks/notification-channels.ts"
import { SchedulesLive } from "./schedules/schedules.ts"
import { SessionSchedules } from "./schedules/session-schedules.ts"
import { TrackLive } from "./track/track-live.ts"
import { Profiles } from "./profiles/profiles.ts"
import { ProfileEntityLive } from "./entities/profile.ts"
import { callbackView } from "./http/views/callback-view.ts"
import { AppConfig, clusterMode, loadAppConfig } from "./config/config.ts"
import { applyServiceV8Flags } from "./config/node-flags.ts"
import { HttpLive, logListening, RequestBase } from "./http/server/app.ts"
import { JsonLoggerLive, LogLines } from "./observability/logger.ts"
import { databaseLayer } from "./store/database.ts"
import { isBucket, Ledger, toMicros, usd2 } from "./billing/ledger.ts"
import { Plans } from "./billing/plans.ts"
import { AutoRechargeLive } from "./billing/auto-recharge.ts"
import { Budget } from "./billing/budget.ts"
import { budgetView, MAX_CAP_USD } from "./http/server/billing.ts"
import { clientCommands, clientUsage, mainClient } from "./cli/client.ts"

const usage = `usage: wa [serve | runner | migrate | projects create --name N | keys create --project P [--name N] [--scope admin|run] | credits grant --project P --usd N [--bucket additional|monthly] | plans list | plans set --project P --plan ID | plans unset --project P | budget set --project P --usd N|none | budget show --project P | users create --email E --password-stdin [--name N] [--tenant T] [--role admin|member]]`
import { AccountsLive } from "./accounts/accounts-live.ts"
import { Tenants } from "./accounts/tenants.ts"
import { Users } from "./accounts/users.ts"
import { parseProviders } from "./accounts/sso.ts"


class UsageError extends Error {}

const flag = (args: ReadonlyArray<string>, name: string): string | undefined => {
  const index = args.indexOf(`--${name}`)
  if (index === -1) return undefined
  const value = args[index + 1]
  if (value === undefined || value.startsWith("--")) throw new UsageError(`--${name} needs a value\n${usage}`)
  return value
}

const logLayer = (level: "Info" | "Warn") =>
  Layer.unwrap(Effect.gen(function*() {
    const config = yield* AppConfig
    return Layer.mergeAll(
      JsonLoggerLive,
      Layer.succeed(References.MinimumLogLevel, level === "Warn" ? "Warn" : config.logLevel)
    ).pipe(Layer.provideMerge(LogLines.layer))
  }))

/** Services of the products, over the database and the cluster. */
const ProductServices = Profiles.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Sessions.layer, Research.layer, Search.layer, TrackLive)),
  Layer.provideMerge(SessionSchedules.layer),
  Layer.provideMerge(Layer.mergeAll(SessionEntityLive, ResearchEntityLive, WebSearchEntityLive, StartupRecoveryLive, ProfileEntityLive)),
  Layer.provideMerge(RunNotifier.layer(callbackView)),
  Layer.provideMerge(TakeControl.layer),
  Layer.provideMerge(NotificationChannelsLive),
  Layer.provideMerge(SchedulesLive),
  Layer.provideMerge(WebSearch.layerFetch),
  Layer.provideMerge(Reader.layer.pipe(Layer.provide(ReaderBrowser.layerFromPool))),
  Layer.provideMerge(Layer.mergeAll(
    RunStore.layer,
    RunEventBus.layer,
    ScreenshotStore.layer,
    ArtifactStore.layer,
    WorkspaceStore.layer,
    AgentModel.layer,
    BrowserPool.layerFromAppConfig,
    Callbacks.layer
  )),
  Layer.provideMerge(ClusterLive)
)

/** What `serve` and `runner` both stand on: the products, the runner lifecycle, the stores, the
 * database, the logger and the config. */
const RunnerFoundation = ProductServices.pipe(
  Layer.provideMerge(RunnerLifecycle.layer),
  Layer.provideMerge(Layer.mergeAll(ApiKeys.layer, Projects.layer)),
  Layer.provideMerge(databaseLayer("own")),
  // What request fibers start from (src/http/server/app.ts): the config and the logging below it.
  Layer.provideMerge(RequestBase.layer),
  Layer.provideMerge(logLayer("Info")),
  Layer.provideMerge(AppConfig.layer)
)

// On SIGTERM the layers close in reverse order: HTTP first, then the drain (runs in flight may
// finish), then the entities and the cluster (shards handed over). See src/cluster/lifecycle.ts.
const serve = Layer.mergeAll(
  Layer.effectDiscard(logListening).pipe(Layer.provideMerge(HttpLive)),
  BootstrapLive,
  AutoRechargeLive
).pipe(
  Layer.provide(DrainLive),
  Layer.provide(RunnerFoundation)
)

/** A runner only: the entities and the cluster, with probes and metrics on WA_PORT (no API). */
const runner = DrainLive.pipe(
  Layer.provideMerge(Layer.effectDiscard(logListening).pipe(Layer.provideMerge(RunnerHttpLive))),
  Layer.provide(RunnerFoundation)
)

const printJson = (value: unknown) => Effect.sync(() => process.stdout.write(JSON.stringify(value) + "\n"))

/** Runs a one-shot command against the data dir's database (attaching to a running service's). */
const oneShot = <A>(program: Effect.Effect<A, never, ApiKeys | Projects | Ledger | Plans | Budget | Users | Tenants>) =>
  program.pipe(
    Effect.flatMap(printJson),
    Effect.provide(Layer.mergeAll(ApiKeys.layer, Projects.layer, Ledger.layer, Plans.layer, Budget.layer, AccountsLive).pipe(
      Layer.provideMerge(databaseLayer("attach")),
      Layer.provideMerge(logLayer("Warn")),
      Layer.provide(AppConfig.layer)
    ))
  )

class CommandFailed extends Error {}

const commands: Record<string, (args: ReadonlyArray<string>) => Effect.Effect<void>> = {
  migrate: () => oneShot(Effect.succeed({ migrated: true })),
  "projects create": (args) => {
    const name = flag(args, "name")
    if (name === undefined || name.length === 0 || name.length > 100) throw new UsageError(`projects create needs --name (1 to 100 characters)\n${usage}`)
    return oneShot(Projects.use((projects) => projects.create(name)).pipe(Effect.map((p) => ({ project_id: p.id, name: p.name }))))
  },
  "keys create": (args) => {
    const projectId = flag(args, "project")
    const name = flag(args, "name") ?? null
    if (projectId === undefined) throw new UsageError(`keys create needs --project\n${usage}`)
    if (name !== null && name.length > 100) throw new UsageError("--name is at most 100 characters")
    const scope = flag(args, "scope") ?? "admin"
    if (!(apiKeyScopes as ReadonlyArray<string>).includes(scope)) throw new UsageError(`--scope is admin or run\n${usage}`)
    return oneShot(Effect.gen(function*() {
      const project = yield* Projects.use((projects) => projects.find(projectId))
      if (project === undefined) return yield* Effect.die(new CommandFailed(`no project ${projectId}`))
      const { row, secret } = yield* ApiKeys.use((keys) =>
        keys.create(projectId, name, { scope: scope as ApiKeyScope, createdByKeyId: null })
      )
      return { project_id: projectId, key_id: row.id, scope: row.scope, secret_token: secret }
    }))
  },
  // The first console user (there is no open sign-up): the password comes on stdin, never in argv
  // (which other local users can read). With --tenant the user joins that tenant (admin by
  // default); `ten_default` holds the projects made before tenants and by `projects create`.
  "users create": (args) => {
    const email = flag(args, "email")
    const name = flag(args, "name") ?? null
    const tenant = flag(args, "tenant")
    const role = flag(args, "role") ?? "admin"
    if (email === undefined || email.length < 3 || email.length > 255 || !/^[^\s@]+@[^\s@]+$/.test(email)) {
      throw new UsageError(`users create needs --email (an address, 3 to 255 characters)\n${usage}`)
    }
    if (!args.includes("--password-stdin")) throw new UsageError(`users create needs --password-stdin (the password is read from stdin)\n${usage}`)
    if (name !== null && name.length > 100) throw new UsageError("--name is at most 100 characters")
    if (role !== "admin" && role !== "member") throw new UsageError(`--role is admin or member\n${usage}`)
    return oneShot(Effect.gen(function*() {
      const password = (yield* Effect.promise(async () => {
        const chunks: Array<Buffer> = []
        for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
        return Buffer.concat(chunks).toString("utf8")
      })).replace(/\r?\n$/, "")
      if (password.length < 8 || password.length > 200) return yield* Effect.die(new CommandFailed("the password must be 8 to 200 characters"))
      if (tenant !== undefined && !(yield* Tenants.use((tenants) => tenants.exists(tenant)))) {
        return yield* Effect.die(new CommandFailed(`no tenant ${tenant}`))
      }
      const user = yield* Users.use((users) => users.create({ email, password, displayName: name })).pipe(
        Effect.catchTag("AccountConflict", (e) => Effect.die(new CommandFailed(e.detail)))
      )
      if (tenant !== undefined) {
        yield* Tenants.use((tenants) => tenants.addMember(tenant, user.id, role, user.identity_id)).pipe(
          Effect.catchTags({
            AccountResourceNotFound: () => Effect.die(new CommandFailed(`no tenant ${tenant}`)),
            AccountConflict: (e) => Effect.die(new CommandFailed(e.detail))
          })
        )
      }
      return { user_id: user.id, email: user.email, tenant_id: tenant ?? null, role: tenant === undefined ? null : role }
    }))
  },
  // Credits a project (src/billing/ledger.ts): `additional` (default; a top-up, never expires) or
  // `monthly` (expires at the end of the billing period). Prints the new balance.
  "credits grant": (args) => {
    const projectId = flag(args, "project")
    const usd = Number(flag(args, "usd"))
    const bucket = flag(args, "bucket") ?? "additional"
    if (projectId === undefined) throw new UsageError(`credits grant needs --project\n${usage}`)
    if (!Number.isFinite(usd) || usd <= 0 || usd > 1_000_000) throw new UsageError(`--usd is a positive amount of dollars (at most 1000000)\n${usage}`)
    if (!isBucket(bucket)) throw new UsageError(`--bucket is additional or monthly\n${usage}`)
    return oneShot(Effect.gen(function*() {
      const project = yield* Projects.use((projects) => projects.find(projectId))
      if (project === undefined) return yield* Effect.die(new CommandFailed(`no project ${projectId}`))
      const { balance } = yield* Ledger.use((ledger) => ledger.grant(projectId, toMicros(usd), bucket))
      return {
        project_id: projectId,
        granted_usd: usd2(toMicros(usd)),
        bucket,
        credit_balance_usd: usd2(balance.totalMicros),
        monthly_credits_usd: usd2(balance.monthlyMicros),
        additional_credits_usd: usd2(balance.additionalMicros),
        period_start: balance.periodStart.toISOString(),
        period_end: balance.periodEnd.toISOString()
      }
    }))
  },
  // Plans (src/billing/plans.ts): the plan table as configured, and a project's plan.
  "plans list": () =>
    oneShot(Plans.use((plans) =>
      Effect.succeed({
        default_plan: plans.table.defaultPlan.id,
        plans: plans.table.plans.map((plan) => ({
          id: plan.id,
          name: plan.name,
          concurrency: plan.concurrency,
          scheduled_cap: plan.scheduledCap,
          monthly_credits_usd: usd2(plan.monthlyCreditsMicros),
          monthly_quota_usd: plan.monthlyQuotaMicros === null ? null : usd2(plan.monthlyQuotaMicros)
        }))
      })
    )),
  "plans set": (args) => {
    const projectId = flag(args, "project")
    const planId = flag(args, "plan")
    if (projectId === undefined || planId === undefined) throw new UsageError(`plans set needs --project and --plan\n${usage}`)
    return oneShot(planCommand(projectId, (plans) =>
      plans.set(projectId, planId).pipe(
        Effect.catchTag("UnknownPlan", (e) => Effect.die(new CommandFailed(`no plan ${e.planId}; plans: ${e.known.join(", ")}`)))
      )))
  },
  "plans unset": (args) => {
    const projectId = flag(args, "project")
    if (projectId === undefined) throw new UsageError(`plans unset needs --project\n${usage}`)
    return oneShot(planCommand(projectId, (plans) => plans.unset(projectId)))
  },
  // The project's monthly budget cap (src/billing/budget.ts): `--usd N` sets it, `--usd none`
  // removes it. Prints the budget as GET /billing/budget shows it.
  "budget set": (args) => {
    const projectId = flag(args, "project")
    const raw = flag(args, "usd")
    if (projectId === undefined || raw === undefined) throw new UsageError(`budget set needs --project and --usd\n${usage}`)
    const usd = raw === "none" ? null : /^\d{1,9}(\.\d{1,6})?$/.test(raw) ? Number(raw) : Number.NaN
    if (usd !== null && !(usd >= 0 && usd <= MAX_CAP_USD)) throw new UsageError(`--usd is an amount of dollars from 0 to ${MAX_CAP_USD}, or none\n${usage}`)
    return oneShot(Effect.gen(function*() {
      const project = yield* Projects.use((projects) => projects.find(projectId))
      if (project === undefined) return yield* Effect.die(new CommandFailed(`no project ${projectId}`))
      return budgetView(projectId, yield* Budget.use((budget) => budget.setCap(projectId, usd === null ? null : toMicros(usd))))
    }))
  },
  "budget show": (args) => {
    const projectId = flag(args, "project")
    if (projectId === undefined) throw new UsageError(`budget show needs --project\n${usage}`)
    return oneShot(Effect.gen(function*() {
      const project = yield* Projects.use((projects) => projects.find(projectId))
      if (project === undefined) return yield* Effect.die(new CommandFailed(`no project ${projectId}`))
      return budgetView(projectId, yield* Budget.use((budget) => budget.status(projectId)))
    }))
  }
}

/** Runs a plan change for an existing project and prints the project's plan and balance. */
const planCommand = (
  projectId: string,
  change: (plans: Plans["Service"]) => Effect.Effect<{ readonly plan: { readonly id: string }; readonly subscriptionStatus: string }>
) =>
  Effect.gen(function*() {
    const project = yield* Projects.use((projects) => projects.find(projectId))
    if (project === undefined) return yield* Effect.die(new CommandFailed(`no project ${projectId}`))
    const { plan, subscriptionStatus } = yield* Plans.use(change)
    const balance = yield* Ledger.use((ledger) => ledger.balance(projectId))
    return {
      project_id: projectId,
      plan_id: plan.id,
      subscription_status: subscriptionStatus,
      credit_balance_usd: usd2(balance.totalMicros),
      monthly_credits_usd: usd2(balance.monthlyMicros),
      additional_credits_usd: usd2(balance.additionalMicros),
      period_start: balance.periodStart.toISOString(),
      period_end: balance.periodEnd.toISOString()
    }
  })

const main = (argv: ReadonlyArray<string>): Effect.Effect<void> => {
  const [first = "serve", second, ...rest] = argv
  if (first === "serve" || first === "runner") {
    applyServiceV8Flags()
    return Layer.launch(first === "serve" ? serve : runner).pipe(Effect.orDie)
  }
  if (first === "--help" || first === "help") return Effect.sync(() => console.log(`${usage}\n${clientUsage}`))
  const command = commands[first] ?? commands[`${first} ${second ?? ""}`]
  if (command === undefined) throw new UsageError(`unknown command: ${argv.join(" ")}\n${usage}`)
  return command(commands[first] !== undefined ? [second ?? "", ...rest].filter((a) => a !== "") : rest)
}

// Client commands use the API of a running service, not this machine's server configuration.
if (clientCommands.has(process.argv[2] ?? "")) await mainClient(process.argv.slice(2))

// Validate the configuration first: a bad value is one line naming the variable, exit code 2.
try {
  const config = await Effect.runPromise(loadAppConfig())
  parseProviders(Option.getOrUndefined(config.oidcProviders))
  if (process.argv[2] === "runner" && clusterMode(config) !== "socket") {
    console.error("invalid configuration: `wa runner` joins a cluster of socket runners; set DATABASE_URL (and WA_CLUSTER=socket or leave it unset)")
    process.exit(2)
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error))
  process.exit(2)
}

try {
  NodeRuntime.runMain(main(process.argv.slice(2)), {
    // Errors go to stderr, never into the JSON output of a command; a stop by SIGTERM/SIGINT is a
    // normal end (exit 0), which is what process supervisors expect of a graceful shutdown.
    disableErrorReporting: true,
    teardown: (exit, onExit) => {
      if (Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)) return onExit(0)
      const failure = Cause.squash(exit.cause)
      process.stderr.write(`${failure instanceof CommandFailed || failure instanceof UsageError ? failure.message : Cause.pretty(exit.cause)}\n`)
      onExit(failure instanceof UsageError ? 2 : 1)
    }
  })
} catch (error) {
  if (error instanceof UsageError) {
    console.error(error.message)
    process.exit(2)
  }
  throw error
}

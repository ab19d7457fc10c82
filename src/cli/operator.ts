/**
 * The operator verbs of `wa`: `serve` and `runner` (their layers: src/server.ts, loaded only for
 * them), `migrate`, and one-shot administration commands that print one JSON document on stdout and
 * work whether or not the service runs on the same data dir (attaching to its database).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { ApiKeys, apiKeyScopes, type ApiKeyScope } from "../auth/api-keys.ts"
import { Projects } from "../auth/projects.ts"
import { AppConfig, clusterMode, loadAppConfig } from "../config/config.ts"
import { applyServiceV8Flags } from "../config/node-flags.ts"
import { logLayer } from "../observability/log-layer.ts"
import { databaseLayer } from "../store/database.ts"
import { abandonPrestartedEmbeddedPostgres } from "../store/embedded-postgres.ts"
import { isBucket, Ledger } from "../billing/ledger.ts"
import { toMicros } from "../domain/money.ts"
import { usdFromMicros } from "../domain/money.ts"
import { Plans } from "../billing/plans.ts"
import { Budget } from "../billing/budget.ts"
import { budgetView, MAX_CAP_USD } from "../http/server/billing.ts"
import { AccountsLive } from "../accounts/accounts-live.ts"
import { Tenants } from "../accounts/tenants.ts"
import { Users } from "../accounts/users.ts"
import { hashPassword } from "../accounts/passwords.ts"
import { parseProviders } from "../accounts/sso.ts"
import { operatorUsage as usage } from "./usage.ts"
import { ProjectId } from "../domain/run.ts"
import { TenantId } from "../domain/id-schemas.ts"

class UsageError extends Error {}

const flag = (args: ReadonlyArray<string>, name: string): string | undefined => {
  const index = args.indexOf(`--${name}`)
  if (index === -1) return undefined
  const value = args[index + 1]
  if (value === undefined || value.startsWith("--")) throw new UsageError(`--${name} needs a value\n${usage}`)
  return value
}

/** The --project flag: the project id enters the operator commands here, branded once. */
const projectFlag = (args: ReadonlyArray<string>): ProjectId | undefined => {
  const value = flag(args, "project")
  return value === undefined ? undefined : ProjectId.make(value)
}

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

/** A password given on stdin (never in argv, which other local users can read): 8 to 200 characters. */
const passwordFromStdin = Effect.gen(function*() {
  const password = (yield* Effect.promise(async () => {
    const chunks: Array<Buffer> = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString("utf8")
  })).replace(/\r?\n$/, "")
  if (password.length < 8 || password.length > 200) return yield* Effect.die(new CommandFailed("the password must be 8 to 200 characters"))
  return password
})

const commands: Record<string, (args: ReadonlyArray<string>) => Effect.Effect<void>> = {
  migrate: () => oneShot(Effect.succeed({ migrated: true })),
  "projects create": (args) => {
    const name = flag(args, "name")
    if (name === undefined || name.length === 0 || name.length > 100) throw new UsageError(`projects create needs --name (1 to 100 characters)\n${usage}`)
    return oneShot(Projects.use((projects) => projects.create(name)).pipe(Effect.map((p) => ({ project_id: p.id, name: p.name }))))
  },
  "keys create": (args) => {
    const projectId = projectFlag(args)
    const name = flag(args, "name") ?? null
    if (projectId === undefined) throw new UsageError(`keys create needs --project\n${usage}`)
    if (name !== null && name.length > 100) throw new UsageError("--name is at most 100 characters")
    const scope = flag(args, "scope") ?? "admin"
    if (!(apiKeyScopes as ReadonlyArray<string>).includes(scope)) throw new UsageError(`--scope is admin or run\n${usage}`)
    return oneShot(Effect.gen(function*() {
      const project = yield* Projects.use((projects) => projects.find(projectId))
      if (project === undefined) return yield* Effect.die(new CommandFailed(`no project ${projectId}`))
      // The plan's cap on the project's keys holds here as through the API (WA_MAX_KEYS_PER_PROJECT
      // overrides it), counted in the insert's transaction: past it nothing is created.
      const { projectKeys } = yield* Plans.use((plans) => plans.capsFor(projectId))
      const { row, secret } = yield* ApiKeys.use((keys) =>
        keys.createWithinPlan(projectId, name, { scope: scope as ApiKeyScope, createdByKeyId: null }, projectKeys)
      ).pipe(Effect.catchTag("PlanLimitReached", (e) =>
        Effect.die(new CommandFailed(
          `project ${projectId} already has ${e.count} API keys that are not revoked, its plan's limit is ${e.limit}: ` +
            `revoke one (DELETE /v1/projects/${projectId}/api_keys/{key_id}), move the project to a bigger plan (wa plans set), ` +
            `or raise the cap for every project (WA_MAX_KEYS_PER_PROJECT)`
        ))))
      return { project_id: projectId, key_id: row.id, scope: row.scope, secret_token: secret }
    }))
  },
  // The first console user (there is no open sign-up): the password comes on stdin, never in argv
  // (which other local users can read). With --tenant the user joins that tenant (admin by
  // default); `ten_default` holds the projects made before tenants and by `projects create`.
  "users create": (args) => {
    const email = flag(args, "email")
    const name = flag(args, "name") ?? null
    // The tenant id enters from the command line (an unknown one is refused below).
    const tenantFlag = flag(args, "tenant")
    const tenant = tenantFlag === undefined ? undefined : TenantId.make(tenantFlag)
    const role = flag(args, "role") ?? "admin"
    if (email === undefined || email.length < 3 || email.length > 255 || !/^[^\s@]+@[^\s@]+$/.test(email)) {
      throw new UsageError(`users create needs --email (an address, 3 to 255 characters)\n${usage}`)
    }
    if (!args.includes("--password-stdin")) throw new UsageError(`users create needs --password-stdin (the password is read from stdin)\n${usage}`)
    if (name !== null && name.length > 100) throw new UsageError("--name is at most 100 characters")
    if (role !== "admin" && role !== "member") throw new UsageError(`--role is admin or member\n${usage}`)
    return oneShot(Effect.gen(function*() {
      const password = yield* passwordFromStdin
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
  // For operators without outgoing mail (or a person who cannot receive it): a new password, which
  // ends every session of the account and marks its address verified (the operator vouches for the
  // person, as with `users create`).
  "users reset-password": (args) => {
    const email = flag(args, "email")
    if (email === undefined) throw new UsageError(`users reset-password needs --email\n${usage}`)
    if (!args.includes("--password-stdin")) throw new UsageError(`users reset-password needs --password-stdin (the password is read from stdin)\n${usage}`)
    return oneShot(Effect.gen(function*() {
      const password = yield* passwordFromStdin
      const user = yield* Users.use((users) => users.findByEmail(email))
      if (user === undefined) return yield* Effect.die(new CommandFailed(`no account with the email ${email}`))
      const hash = yield* hashPassword(password)
      yield* Users.use((users) => users.setPasswordAfterProof(user.id, hash))
      return { user_id: user.id, email: user.email, email_verified: true, sessions_ended: true }
    }))
  },
  // Credits a project (src/billing/ledger.ts): `additional` (default; a top-up, never expires) or
  // `monthly` (expires at the end of the billing period). Prints the new balance.
  "credits grant": (args) => {
    const projectId = projectFlag(args)
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
        granted_usd: usdFromMicros(toMicros(usd)),
        bucket,
        credit_balance_usd: usdFromMicros(balance.totalMicros),
        monthly_credits_usd: usdFromMicros(balance.monthlyMicros),
        additional_credits_usd: usdFromMicros(balance.additionalMicros),
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
          monthly_credits_usd: usdFromMicros(plan.monthlyCreditsMicros),
          monthly_quota_usd: plan.monthlyQuotaMicros === null ? null : usdFromMicros(plan.monthlyQuotaMicros)
        }))
      })
    )),
  "plans set": (args) => {
    const projectId = projectFlag(args)
    const planId = flag(args, "plan")
    if (projectId === undefined || planId === undefined) throw new UsageError(`plans set needs --project and --plan\n${usage}`)
    return oneShot(planCommand(projectId, (plans) =>
      plans.set(projectId, planId).pipe(
        Effect.catchTag("UnknownPlan", (e) => Effect.die(new CommandFailed(`no plan ${e.planId}; plans: ${e.known.join(", ")}`)))
      )))
  },
  "plans unset": (args) => {
    const projectId = projectFlag(args)
    if (projectId === undefined) throw new UsageError(`plans unset needs --project\n${usage}`)
    return oneShot(planCommand(projectId, (plans) => plans.unset(projectId)))
  },
  // The project's monthly budget cap (src/billing/budget.ts): `--usd N` sets it, `--usd none`
  // removes it. Prints the budget as GET /billing/budget shows it.
  "budget set": (args) => {
    const projectId = projectFlag(args)
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
    const projectId = projectFlag(args)
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
  projectId: ProjectId,
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
      credit_balance_usd: usdFromMicros(balance.totalMicros),
      monthly_credits_usd: usdFromMicros(balance.monthlyMicros),
      additional_credits_usd: usdFromMicros(balance.additionalMicros),
      period_start: balance.periodStart.toISOString(),
      period_end: balance.periodEnd.toISOString()
    }
  })

const main = (argv: ReadonlyArray<string>): Effect.Effect<void> => {
  const [first = "serve", second, ...rest] = argv
  if (first === "serve" || first === "runner") {
    applyServiceV8Flags()
    return Effect.promise(() => import("../server.ts")).pipe(
      Effect.flatMap((server) => Layer.launch(first === "serve" ? server.serve : server.runner)),
      Effect.orDie
    )
  }
  const command = commands[first] ?? commands[`${first} ${second ?? ""}`]
  if (command === undefined) throw new UsageError(`unknown command: ${argv.join(" ")}\n${usage}`)
  return command(commands[first] !== undefined ? [second ?? "", ...rest].filter((a) => a !== "") : rest)
}

/** Validates the configuration, then runs the verb; exits with its code (2 for usage and configuration). */
export const runOperatorCommand = async (argv: ReadonlyArray<string>): Promise<void> => {
  // Validate the configuration first: a bad value is one line naming the variable, exit code 2.
  try {
    const config = await Effect.runPromise(loadAppConfig())
    parseProviders(Option.getOrUndefined(config.oidcProviders))
    if (argv[0] === "runner" && clusterMode(config) !== "socket") {
      console.error("invalid configuration: `wa runner` joins a cluster of socket runners; set DATABASE_URL (and WA_CLUSTER=socket or leave it unset)")
      process.exit(2)
    }
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error))
    await abandonPrestartedEmbeddedPostgres()
    process.exit(2)
  }

  try {
    NodeRuntime.runMain(main(argv), {
      // Errors go to stderr, never into the JSON output of a command; a stop by SIGTERM/SIGINT is a
      // normal end (exit 0), which is what process supervisors expect of a graceful shutdown.
      disableErrorReporting: true,
      teardown: (exit, onExit) => {
        if (Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)) return onExit(0)
        const failure = Cause.squash(exit.cause)
        process.stderr.write(`${failure instanceof CommandFailed || failure instanceof UsageError ? failure.message : Cause.pretty(exit.cause)}\n`)
        // A `serve` that failed before its database layer took the head start over stops it here.
        void abandonPrestartedEmbeddedPostgres().finally(() => onExit(failure instanceof UsageError ? 2 : 1))
      }
    })
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(error.message)
      process.exit(2)
    }
    throw error
  }
}

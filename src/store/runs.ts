/**
 * Sessions, runs and their event logs in PostgreSQL. A run's state change and the event that
 * reports it are written in one transaction; event ids increase by one per run (the run row is
 * locked while the next id is taken), and every new event is announced with NOTIFY so SSE streams
 * on any node wake up.
 */
import { Context, Effect, identity, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { withMethodSpans } from "../observability/spans.ts"
import { StateCipher } from "../security/state-cipher.ts"
import { ScreenshotStore } from "./screenshots.ts"
import {
  type BudgetExceeded,
  InputRequestAnswered,
  InputRequestNotFound,
  type InsufficientCredits,
  InvalidTransition,
  PreviousRunActive,
  RunNotAwaitingInput,
  RunNotFound,
  RunCapReached,
  SessionCapReached,
  SessionClosed
} from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import {
  kindOfTag,
  type Run,
  runFromRow,
  type RunId,
  type RunKind,
  type RunRequest,
  type ProjectId,
  type Session,
  sessionFromRow,
  type SessionId,
  storedRequest
} from "../domain/run.ts"
import { canTransition, isTerminal, type RunStatus } from "../domain/run-state.ts"
import { toMicros } from "../domain/money.ts"
import type { EventData, NewRunEvent, RunEventType, StatusChangeExtra } from "../domain/events.ts"
import type { Phase } from "../domain/research.ts"
import { chargeAllInTransaction } from "./ledger.ts"
import type { Exhausted } from "../domain/billing.ts"
import { estimatedChargeMicros, holdInTransaction, releaseHoldInTransaction } from "./credit-holds.ts"
import { browserUsd } from "../config/prices.ts"
import { AppConfig } from "../config/config.ts"
import { admitRunInFlight, oneAdmissionAtATime, RunStartedBy } from "./run-admission.ts"
import { usd, usdFromMicros, usdSum } from "../domain/money.ts"

export const EVENTS_CHANNEL = "wa_run_events"

/** The first key of the advisory lock that serialises a project's session creates (the second is the project's hash). */
const PROJECT_SESSIONS_LOCK = 0x7761_7332 // "was2"

/** A step charges the browser time due once it is at least this much (micro-USD); the run's end charges the rest. */
export const MIN_BROWSER_STEP_MICROS = 1_000

export { SessionCapReached } from "../domain/errors.ts"

/**
 * The execution writing to a run was superseded by another (its runner was presumed dead and the
 * run resumed elsewhere). Raised as a defect: the stale execution must stop, not recover.
 */
export class SupersededExecution extends Error {
  override readonly name = "SupersededExecution"
  readonly runId: string
  constructor(runId: string) {
    super(`run ${runId} is executed elsewhere now`)
    this.runId = runId
  }
}

/** Columns of a run row the store itself looks at while it holds the row's lock. */
interface LockedRun {
  readonly id: RunId
  readonly project_id: string
  readonly session_id: SessionId | null
  readonly status: RunStatus
  readonly phase: string | null
  readonly executor: string | null
}

type Row = Record<string, unknown> & { readonly kind: string; readonly request: unknown }

export interface RunEvent {
  readonly id: number
  readonly type: string
  readonly data: Record<string, unknown>
  readonly created_at: Date
}

export interface NewRun {
  readonly instructions: string | null
  readonly request: RunRequest
  readonly maxSteps: number
  readonly model: string | null
  /** Wall-clock budget of the run, from max_duration_minutes. */
  readonly maxDurationMs: number | null
  readonly parentRunId?: RunId | null
}

/** What a run needs to go on elsewhere: its conversation, step, page and browser storage. */
export interface Checkpoint {
  readonly step: number
  readonly history: unknown
  /** The active tab's URL. */
  readonly url: string | null
  /** Every open tab's URL, in opening order (the active one included). */
  readonly tabs: ReadonlyArray<string>
  /** A form on the active tab holds input not yet submitted: it would be lost by a resume. */
  readonly dirtyForm: boolean
  readonly storageState: unknown
}

/** Which cost field of the run (and of its session) a charge adds to. */
export type CostColumn = "llm" | "browser" | "proxy" | "service"

/** One cost of a run, charged once per idempotency key (see RunStore.chargeRun). */
export interface RunCharge {
  /** The ledger entry's kind: charge_llm, charge_browser, charge_proxy, charge_research, charge_search, ... */
  readonly kind: string
  readonly column: CostColumn
  readonly micros: number
  readonly idempotencyKey: string
  /**
   * Record it even when the project cannot pay (the work is done: tokens spent, browser time
   * used). Default true; false refuses it (an up-front fee), see `refused`.
   */
  readonly force?: boolean
}

export interface ChargeResult {
  /** With billing on: the project can pay for no more work (credits ran out, or its budget cap is reached). */
  readonly exhausted: Exhausted | null
  /** A charge that was not forced was refused (nothing recorded for it). */
  readonly refused: boolean
}

export interface TransitionOptions {
  readonly terminalReason?: string
  readonly output?: unknown
  readonly errorCode?: string
  readonly errorDetail?: string
  readonly expired?: boolean
  /** Extra data for the status_changed event (src/domain/events.ts). */
  readonly data?: StatusChangeExtra
  /** The execution making the change (see claimExecution); a superseded one is refused. */
  readonly executor?: string
}

export class RunStore extends Context.Service<RunStore, {
  readonly createSession: (input: {
    readonly projectId: ProjectId
    /** The acting principal (an API key's id, or a console user's): the per-key cap counts by it. */
    readonly apiKeyId: string
    readonly profileId: string | null
    readonly workspaceId: string | null
    readonly run: NewRun
    /** Open sessions the key may hold; the count and the insert are one transaction. */
    readonly maxOpenSessions: number
    /** Open sessions the whole project may hold (its plan's), counted in the same transaction. */
    readonly maxProjectSessions?: number
  }) => Effect.Effect<{ readonly session: Session; readonly run: Run }, SessionCapReached | InsufficientCredits | BudgetExceeded>
  /** Billing on: the run is admitted against its estimated charge, held (src/store/credit-holds.ts), in the transaction that inserts it. */
  readonly addRun: (sessionId: SessionId, run: NewRun) => Effect.Effect<Run, SessionClosed | PreviousRunActive | InsufficientCredits | BudgetExceeded>
  /** A run without a session (WebSearch, DeepResearch), with its first event. */
  readonly createStandaloneRun: (projectId: ProjectId, request: RunRequest, options?: {
    readonly maxDurationMs?: number
    /** The run this one derives from (a refinement or a follow-up). */
    readonly parentRunId?: RunId | null
    /** What the derived run was asked on top of its request (a refinement's text). */
    readonly instructions?: string | null
  }) => Effect.Effect<Run, RunCapReached | InsufficientCredits | BudgetExceeded>
  /** Runs of one kind in a project, newest first. */
  readonly listRuns: (projectId: ProjectId, kind: RunKind, status: string | undefined, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<Run>>
  /** Enters a phase (DeepResearch), with its `run.phase_changed` event. */
  readonly setPhase: (runId: RunId, phase: Phase, executor?: string) => Effect.Effect<void>
  /** A lookup by any id (as getRun): one that names no session of the project finds nothing. */
  readonly getSession: (projectId: ProjectId, sessionId: SessionId) => Effect.Effect<Session | undefined>
  readonly listSessions: (projectId: ProjectId, status: string | undefined, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<Session>>
  readonly runsOfSession: (sessionId: SessionId) => Effect.Effect<ReadonlyArray<Run>>
  /**
   * getRun, transition, appendEvent and eventsAfter still take a plain string: the SSE stream, the
   * event bus, the SSE bench and the in-process test helpers call them with one (a RunId is one).
   */
  readonly getRun: (runId: RunId) => Effect.Effect<Run | undefined>
  /** The run of that kind in the project (and in that session, when one is named), or RunNotFound. */
  readonly findRun: (projectId: ProjectId, runId: RunId, kind: RunKind, sessionId?: SessionId) => Effect.Effect<Run, RunNotFound>
  readonly setSessionStatus: (sessionId: SessionId, status: Session["status"]) => Effect.Effect<void>
  readonly transition: (runId: RunId, to: RunStatus, options?: TransitionOptions) => Effect.Effect<Run, RunNotFound | InvalidTransition>
  /** Appends an event; its payload is the one its type's schema describes (src/domain/events.ts). */
  readonly appendEvent: <T extends RunEventType>(runId: RunId, type: T, data: EventData<T>, executor?: string) => Effect.Effect<number>
  /** Appends events in order in one transaction (a batch of a run's progress). */
  readonly appendEvents: (runId: RunId, events: ReadonlyArray<NewRunEvent>, executor?: string) => Effect.Effect<void>
  /** Makes a new execution the owner of the run and returns its token. */
  readonly claimExecution: (runId: RunId) => Effect.Effect<string>
  /** Events after `afterId`, oldest first; screenshot URLs in them are signed at the time of reading. */
  readonly eventsAfter: (runId: RunId, afterId: number, limit: number) => Effect.Effect<ReadonlyArray<RunEvent>>
  readonly queueMessage: (runId: RunId, content: string) => Effect.Effect<void>
  readonly takeMessages: (runId: RunId) => Effect.Effect<ReadonlyArray<string>>
  readonly createInputRequest: (runId: RunId, prompt: string, schema: unknown, executor?: string) => Effect.Effect<string, InvalidTransition>
  readonly answerInputRequest: (runId: RunId, requestId: string, response: unknown) => Effect.Effect<void, InputRequestNotFound | InputRequestAnswered | RunNotAwaitingInput>
  readonly inputRequest: (requestId: string) => Effect.Effect<{ readonly status: string; readonly response: unknown } | undefined>
  /** The run's newest input request, if it has any. */
  readonly latestInputRequest: (runId: RunId) => Effect.Effect<{ readonly id: string; readonly status: string; readonly response: unknown } | undefined>
  readonly recordStep: (runId: RunId, executor?: string) => Effect.Effect<number>
  /**
   * Ends a step: its model cost is charged and the checkpoint saved in one transaction, so a step
   * interrupted before this point is neither charged nor remembered, and is done again on resume.
   */
  /** Saves the checkpoint, adds the step's cost, and appends `events` (progress of that step), in one transaction. */
  readonly completeStep: (runId: RunId, costUsd: number, checkpoint: Checkpoint, executor?: string, events?: ReadonlyArray<NewRunEvent>) => Effect.Effect<ChargeResult>
  /**
   * Charges costs of a run that are not a step's (a product fee), each once per idempotency key,
   * adding them to the run's (and its session's) cost fields, with a `run.cost_update` event.
   */
  readonly chargeRun: (runId: RunId, charges: ReadonlyArray<RunCharge>, executor?: string) => Effect.Effect<ChargeResult>
  readonly loadCheckpoint: (runId: RunId) => Effect.Effect<Checkpoint | undefined>
  /** Only the named top-level fields of the checkpoint's history (a research run's outline, not its sources). */
  readonly checkpointFields: (runId: RunId, fields: ReadonlyArray<string>) => Effect.Effect<Record<string, unknown> | undefined>
  /** Puts the step counter back to the checkpoint's step before a resumed run goes on. */
  readonly rewindSteps: (runId: RunId, step: number) => Effect.Effect<void>
  readonly setFeedback: (runId: RunId, feedback: unknown) => Effect.Effect<void>
}>()("wa/store/RunStore") {
  static readonly layer = Layer.effect(
    RunStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cipher = yield* StateCipher
      const screenshots = yield* ScreenshotStore
      // A stored screenshot URL has expired by the time an old event is read again: sign it afresh.
      const withFreshUrls = (event: RunEvent): RunEvent =>
        event.type === "run.screenshot" && typeof event.data.url === "string"
          ? { ...event, data: { ...event.data, url: screenshots.refreshUrl(event.data.url) } }
          : event

      // A checkpoint's browser storage state (cookies, local storage) is sealed with the run id as
      // additional data (src/security/state-cipher.ts) and stored as {wa_sealed, key_id, data}.
      // A value without `wa_sealed` is a plaintext state written before encryption: read as is.
      const sealState = (runId: string, state: unknown) => {
        const sealed = cipher.seal(Buffer.from(JSON.stringify(state)), runId)
        return { wa_sealed: 1, key_id: sealed.keyId, data: sealed.bytes.toString("base64") }
      }
      const openState = (runId: string, stored: unknown) =>
        Effect.gen(function*() {
          if (stored === null || stored === undefined) return undefined
          if (typeof stored !== "object" || !("wa_sealed" in stored)) return stored
          const { key_id, data } = stored as unknown as { readonly key_id: string; readonly data: string }
          const opened = yield* Effect.result(cipher.open({ bytes: Buffer.from(data, "base64"), keyId: key_id }, runId))
          if (opened._tag === "Success") return JSON.parse(opened.success.toString("utf8")) as unknown
          // The run resumes without the checkpoint's cookies (its tabs are still reopened).
          yield* Effect.logWarning("a run checkpoint's browser state could not be decrypted; resuming without it").pipe(
            Effect.annotateLogs({ run_id: runId, reason: opened.failure.reason })
          )
          return undefined
        })

      // WA_BILLING=on: every cost is also an entry of the credit ledger (charge_llm, charge_browser, ...).
      const appConfig = yield* Effect.serviceOption(AppConfig)
      const billing = Option.match(appConfig, { onNone: () => false, onSome: (c) => c.billing === "on" })
      const prices = Option.map(appConfig, (c) => c.prices)
      // The cap on a project's runs in flight (src/store/run-admission.ts); none without the config (store tests).
      const maxRunsInFlight = Option.match(appConfig, { onNone: () => undefined, onSome: (c) => c.maxConcurrentRuns })
      // A key's share of them (unset: the project's cap, so one key may fill its project's share).
      const maxRunsPerKey = Option.match(appConfig, { onNone: () => undefined, onSome: (c) => Option.getOrElse(c.maxConcurrentRunsPerKey, () => c.maxConcurrentRuns) })
      const minBalanceMicros = Option.match(appConfig, { onNone: () => 0, onSome: (c) => toMicros(c.billingMinBalanceUsd) })

      /**
       * Billing on: admits a new run against its estimated charge and holds it from the balance
       * (src/store/credit-holds.ts), or refuses it (402). In the transaction that inserts the run.
       */
      const holdFor = (run: Pick<Run, "id" | "project_id" | "request">) =>
        !billing || Option.isNone(prices) ? Effect.void : holdInTransaction(sql, {
          projectId: run.project_id,
          runId: run.id,
          kind: "run",
          micros: estimatedChargeMicros(run.request, prices.value, minBalanceMicros),
          minimumMicros: minBalanceMicros
        })

      /**
       * Browser time of a DoAnything run not charged yet: from its start to now, at
       * browser_per_minute, minus what its browser_cost_usd already holds. Cumulative, so a step
       * whose charge was skipped (its key recorded by an earlier execution) is caught up by the next.
       * Must run inside a transaction that holds the run row lock.
       */
      const browserDue = (runId: string) =>
        Effect.gen(function*() {
          if (Option.isNone(prices)) return 0
          const [row] = yield* sql<{ ms: string | null; charged: string }>`
            SELECT floor(extract(epoch FROM now() - started_at) * 1000)::bigint::text AS ms, round(browser_cost_usd * 1000000)::bigint::text AS charged
            FROM runs WHERE id = ${runId} AND kind = 'do_anything'`
          if (row === undefined || row.ms === null) return 0
          return Math.max(0, toMicros(browserUsd(prices.value, Number(row.ms))) - Number(row.charged))
        })

      /**
       * Charges (billing on: in the ledger, once per key) and adds what was charged to the run's and
       * its session's cost fields, with one run.cost_update event. Inside the caller's transaction,
       * which holds the run row lock, so the work, its charge and the cost fields commit together.
       */
      const applyCharges = (run: LockedRun, charges: ReadonlyArray<RunCharge>, eventData: { readonly step?: number; readonly final?: boolean } = {}) =>
        Effect.gen(function*() {
          let exhausted: Exhausted | null = null
          let refused = false
          const added: Record<CostColumn, number> = { llm: 0, browser: 0, proxy: 0, service: 0 }
          const due = charges.filter((charge) => charge.micros > 0)
          if (billing && due.length > 0) {
            // One lock of the project's balance for all of them (three statements in all).
            const charged = yield* chargeAllInTransaction(sql, run.project_id, due.map((charge) => ({
              kind: charge.kind,
              micros: charge.micros,
              idempotencyKey: charge.idempotencyKey,
              runId: run.id,
              sessionId: run.session_id,
              force: charge.force ?? true
            })))
            exhausted = charged.exhausted
            due.forEach((charge, i) => {
              const outcome = charged.outcomes[i]!
              refused ||= outcome.refused
              if (outcome.recorded) added[charge.column] += charge.micros
            })
          } else {
            for (const charge of due) added[charge.column] += charge.micros
          }
          const increment = added.llm + added.browser + added.proxy + added.service
          if (increment === 0) return { exhausted, refused }
          // The cost fields take the amounts the ledger took, to the micro-dollar.
          const [totals] = yield* sql<{ llm_cost_usd: string; browser_cost_usd: string; proxy_cost_usd: string; service_cost_usd: string }>`
            UPDATE runs SET llm_cost_usd = llm_cost_usd + ${usdFromMicros(added.llm)}::numeric, browser_cost_usd = browser_cost_usd + ${usdFromMicros(added.browser)}::numeric,
              proxy_cost_usd = proxy_cost_usd + ${usdFromMicros(added.proxy)}::numeric, service_cost_usd = service_cost_usd + ${usdFromMicros(added.service)}::numeric
            WHERE id = ${run.id} RETURNING llm_cost_usd, browser_cost_usd, proxy_cost_usd, service_cost_usd`
          const sessions = run.session_id === null ? [] : yield* sql<{ llm_cost_usd: string; browser_cost_usd: string; proxy_cost_usd: string }>`
            UPDATE sessions SET llm_cost_usd = llm_cost_usd + ${usdFromMicros(added.llm)}::numeric, browser_cost_usd = browser_cost_usd + ${usdFromMicros(added.browser)}::numeric,
              proxy_cost_usd = proxy_cost_usd + ${usdFromMicros(added.proxy)}::numeric, updated_at = now()
            WHERE id = ${run.session_id} RETURNING llm_cost_usd, browser_cost_usd, proxy_cost_usd`
          const runTotals = totals!
          yield* insertEvent(run.id, "run.cost_update", {
            ...eventData,
            increment_usd: usdFromMicros(increment),
            // A run without a session (DeepResearch, WebSearch) reports its own totals.
            ...(sessions[0] === undefined
              ? {
                llm_cost_usd: usd(runTotals.llm_cost_usd),
                service_cost_usd: usd(runTotals.service_cost_usd),
                total_cost_usd: usdSum(runTotals.llm_cost_usd, runTotals.browser_cost_usd, runTotals.proxy_cost_usd, runTotals.service_cost_usd)
              }
              : costFields(sessions[0]))
          })
          return { exhausted, refused }
        })

      /**
       * Locks the session of a run (if it has one) before the run itself. Every transaction that
       * locks both takes them in this order, session then run (addRun, a schedule's firing, a run's
       * end, its charges), so adding a run while the previous one ends cannot deadlock.
       */
      const lockSessionOfRun = (runId: string) =>
        sql`SELECT id FROM sessions WHERE id = (SELECT session_id FROM runs WHERE id = ${runId}) FOR UPDATE`

      const lockRun = (runId: string, executor?: string) =>
        sql<LockedRun>`SELECT id, project_id, session_id, status, phase, executor FROM runs WHERE id = ${runId} FOR UPDATE`.pipe(
          Effect.flatMap((rows) => {
            const row = rows[0]
            return executor !== undefined && row !== undefined && row.executor !== executor
              ? Effect.die(new SupersededExecution(runId))
              : Effect.succeed(row)
          })
        )

      // Must run inside a transaction that holds the run row lock.
      const insertEvent = <T extends RunEventType>(runId: string, type: T, data: EventData<T>) =>
        Effect.gen(function*() {
          const rows = yield* sql<{ id: string }>`
            INSERT INTO run_events (run_id, id, type, data)
            SELECT ${runId}, coalesce(max(id), 0) + 1, ${type}, ${JSON.stringify(data)}::jsonb
            FROM run_events WHERE run_id = ${runId}
            RETURNING id::text`
          const id = Number(rows[0]!.id)
          // Delivered at commit, so listeners never see an event before it is readable.
          yield* sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${`${runId}:${id}`})`
          return id
        })

      // `apiKeyId`: the key (or console user) that started it (migration 0026).
      const insertRun = (sessionId: SessionId, projectId: string, run: NewRun, apiKeyId: string | null) =>
        sql<Row>`
          INSERT INTO runs (id, session_id, project_id, status, instructions, request, max_steps, model, parent_run_id, deadline_at, api_key_id)
          VALUES (
            ${makeId("run")}, ${sessionId}, ${projectId}, 'pending', ${run.instructions},
            ${JSON.stringify(storedRequest(run.request))}::jsonb, ${run.maxSteps}, ${run.model}, ${run.parentRunId ?? null},
            ${run.maxDurationMs === null ? null : new Date(Date.now() + run.maxDurationMs)}, ${apiKeyId}
          )
          RETURNING *`.pipe(Effect.map((rows) => runFromRow(rows[0]!)))

      const createSession: RunStore["Service"]["createSession"] = (input) =>
        sql.withTransaction(Effect.gen(function*() {
          // The key's row lock serialises its creates on every node, so the count cannot go stale
          // between the check and the insert (50 parallel creates against a cap of 5 give 5).
          yield* sql`SELECT 1 FROM api_keys WHERE id = ${input.apiKeyId} FOR UPDATE`
          const counted = yield* sql<{ open: number }>`
            SELECT count(*)::int AS open FROM sessions WHERE api_key_id = ${input.apiKeyId} AND status <> 'closed'`
          const open = counted[0]?.open ?? 0
          if (open >= input.maxOpenSessions) return yield* new SessionCapReached({ open, limit: input.maxOpenSessions, scope: "key" })
          if (input.maxProjectSessions !== undefined) {
            // The project's creates (by any key) count and insert one at a time, on every node.
            yield* sql`SELECT pg_advisory_xact_lock(${PROJECT_SESSIONS_LOCK}, hashtext(${input.projectId}))`
            const [project] = yield* sql<{ open: number }>`
              SELECT count(*)::int AS open FROM sessions WHERE project_id = ${input.projectId} AND status <> 'closed'`
            if (project!.open >= input.maxProjectSessions) {
              return yield* new SessionCapReached({ open: project!.open, limit: input.maxProjectSessions, scope: "project" })
            }
          }
          // The store mints ids: a new one is branded where it is made.
          const sessionId = makeId("sess") as SessionId
          yield* sql`
            INSERT INTO sessions (id, project_id, api_key_id, status, profile_id, workspace_id)
            VALUES (${sessionId}, ${input.projectId}, ${input.apiKeyId}, 'running', ${input.profileId}, ${input.workspaceId})`
          const run = yield* insertRun(sessionId, input.projectId, input.run, input.apiKeyId)
          yield* holdFor(run)
          const sessions = yield* sql`
            UPDATE sessions SET latest_run_id = ${run.id} WHERE id = ${sessionId} RETURNING *`
          yield* insertEvent(run.id, "run.status_changed", { run_id: run.id, from: null, status: "pending" })
          return { session: sessionFromRow(sessions[0]), run }
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      const addRun: RunStore["Service"]["addRun"] = (sessionId, run) =>
        sql.withTransaction(Effect.gen(function*() {
          const sessions = yield* sql<{ status: string; project_id: string; latest_run_id: RunId | null; api_key_id: string | null }>`
            SELECT status, project_id, latest_run_id, api_key_id FROM sessions WHERE id = ${sessionId} FOR UPDATE`
          const session = sessions[0]!
          if (session.status === "closed") return yield* new SessionClosed({ sessionId })
          if (session.latest_run_id !== null) {
            const latest = yield* lockRun(session.latest_run_id)
            if (latest !== undefined && !isTerminal(latest.status)) {
              return yield* new PreviousRunActive({ runId: latest.id, status: latest.status })
            }
          }
          // Started by the calling key; a schedule's firing (no caller) counts for the session's key.
          const created = yield* insertRun(sessionId, session.project_id, run, (yield* RunStartedBy) ?? session.api_key_id)
          yield* holdFor(created)
          yield* sql`UPDATE sessions SET latest_run_id = ${created.id}, status = 'running', updated_at = now() WHERE id = ${sessionId}`
          yield* insertEvent(created.id, "run.status_changed", { run_id: created.id, from: null, status: "pending" })
          return created
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      const transition: RunStore["Service"]["transition"] = (runId, to, options = {}) =>
        sql.withTransaction(Effect.gen(function*() {
          // The run's end writes its session (status, browser cost): the session is locked first.
          yield* lockSessionOfRun(runId)
          const run = yield* lockRun(runId, options.executor)
          if (run === undefined) return yield* new RunNotFound({ runId })
          if (!canTransition(run.status, to)) return yield* new InvalidTransition({ runId, from: run.status, to })
          const terminal = isTerminal(to)
          // The run's browser time up to its end, in the transaction that ends it.
          if (terminal && run.session_id !== null) {
            yield* applyCharges(run, [{ kind: "charge_browser", column: "browser", micros: yield* browserDue(runId), idempotencyKey: `browser:${runId}:end` }], { final: true })
          }
          const rows = yield* sql<Row>`
            UPDATE runs SET
              status = ${to},
              updated_at = now(),
              started_at = CASE WHEN ${to} = 'running' AND started_at IS NULL THEN now() ELSE started_at END,
              finished_at = CASE WHEN ${terminal} THEN now() ELSE finished_at END,
              terminal_reason = coalesce(${options.terminalReason ?? null}, terminal_reason),
              output = coalesce(${options.output === undefined ? null : JSON.stringify(options.output)}::jsonb, output),
              error_code = coalesce(${options.errorCode ?? null}, error_code),
              error_detail = coalesce(${options.errorDetail ?? null}, error_detail),
              expired = expired OR ${options.expired ?? false}
            WHERE id = ${runId}
            RETURNING *`
          const updated = runFromRow(rows[0]!)
          yield* insertEvent(runId, "run.status_changed", { run_id: runId, from: run.status, status: to, ...options.data })
          if (terminal) {
            // Its charges are in the ledger: the run's credit hold is settled.
            if (billing) yield* releaseHoldInTransaction(sql, runId)
            yield* insertEvent(runId, "run.completed", {
              run_id: runId,
              status: to,
              terminal_reason: updated.terminal_reason,
              output: updated.output ?? null,
              error: updated.error_code === null ? null : { code: updated.error_code, detail: updated.error_detail }
            })
            yield* sql`UPDATE sessions SET status = 'idle', updated_at = now() WHERE id = ${updated.session_id} AND status = 'running'`
          }
          return updated
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      const appendEvents: RunStore["Service"]["appendEvents"] = (runId, events, executor) =>
        events.length === 0 ? Effect.void : sql.withTransaction(lockRun(runId, executor).pipe(
          Effect.andThen(Effect.forEach(events, (event) => insertEvent(runId, event.type, event.data), { discard: true }))
        )).pipe(Effect.orDie)

      const appendEvent: RunStore["Service"]["appendEvent"] = <T extends RunEventType>(runId: RunId, type: T, data: EventData<T>, executor?: string) =>
        sql.withTransaction(lockRun(runId, executor).pipe(Effect.andThen(insertEvent(runId, type, data)))).pipe(Effect.orDie)

      const createInputRequest: RunStore["Service"]["createInputRequest"] = (runId, prompt, schema, executor) =>
        sql.withTransaction(Effect.gen(function*() {
          const run = yield* lockRun(runId, executor)
          if (run === undefined || run.status !== "running") {
            return yield* new InvalidTransition({ runId, from: run?.status ?? "pending", to: "awaiting_input" })
          }
          const id = makeId("ir")
          yield* sql`INSERT INTO input_requests (id, run_id, prompt, schema) VALUES (${id}, ${runId}, ${prompt}, ${schema === undefined ? null : JSON.stringify(schema)}::jsonb)`
          yield* sql`UPDATE runs SET status = 'awaiting_input', updated_at = now() WHERE id = ${runId}`
          yield* insertEvent(runId, "run.status_changed", { run_id: runId, from: "running", status: "awaiting_input" })
          yield* insertEvent(runId, "run.input_request", { input_request_id: id, request_id: id, prompt, schema: schema ?? null })
          return id
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      const answerInputRequest: RunStore["Service"]["answerInputRequest"] = (runId, requestId, response) =>
        sql.withTransaction(Effect.gen(function*() {
          const run = yield* lockRun(runId)
          const requests = yield* sql<{ status: string }>`SELECT status FROM input_requests WHERE id = ${requestId} AND run_id = ${runId} FOR UPDATE`
          if (requests[0] === undefined) return yield* new InputRequestNotFound({ inputRequestId: requestId, field: "input_request_id" })
          if (requests[0].status !== "pending") return yield* new InputRequestAnswered({ inputRequestId: requestId })
          if (run === undefined || run.status !== "awaiting_input") return yield* new RunNotAwaitingInput({ runId, status: run?.status ?? "pending" })
          yield* sql`UPDATE input_requests SET status = 'answered', response = ${JSON.stringify(response)}::jsonb, resolved_at = now() WHERE id = ${requestId}`
          yield* sql`UPDATE runs SET status = 'running', updated_at = now() WHERE id = ${runId}`
          yield* insertEvent(runId, "run.input_request_resolved", { input_request_id: requestId, request_id: requestId })
          yield* insertEvent(runId, "run.status_changed", { run_id: runId, from: "awaiting_input", status: "running" })
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      const createStandaloneRun: RunStore["Service"]["createStandaloneRun"] = (projectId, request, options = {}) =>
        sql.withTransaction(Effect.gen(function*() {
          const startedBy = yield* RunStartedBy
          if (maxRunsInFlight !== undefined) {
            yield* admitRunInFlight(sql, projectId, maxRunsInFlight, startedBy === undefined || maxRunsPerKey === undefined ? undefined : { id: startedBy, limit: maxRunsPerKey })
          }
          const deadline = options.maxDurationMs === undefined ? null : `${options.maxDurationMs} milliseconds`
          const rows = yield* sql<Row>`
            INSERT INTO runs (id, session_id, project_id, kind, status, request, max_steps, deadline_at, parent_run_id, instructions, api_key_id)
            VALUES (${makeId("run")}, NULL, ${projectId}, ${kindOfTag[request._tag]}, 'pending', ${JSON.stringify(storedRequest(request))}::jsonb, 0,
              CASE WHEN ${deadline}::text IS NULL THEN NULL ELSE now() + ${deadline}::interval END,
              ${options.parentRunId ?? null}, ${options.instructions ?? null}, ${startedBy ?? null})
            RETURNING *`
          const run = runFromRow(rows[0]!)
          yield* holdFor(run)
          yield* insertEvent(run.id, "run.status_changed", { run_id: run.id, from: null, status: "pending" })
          return run
        })).pipe(maxRunsInFlight === undefined ? identity : oneAdmissionAtATime(projectId), Effect.catchTag("SqlError", Effect.die))

      const getRun: RunStore["Service"]["getRun"] = (runId) =>
        sql<Row>`SELECT * FROM runs WHERE id = ${runId}`.pipe(Effect.orDie, Effect.map((rows) => rows[0] === undefined ? undefined : runFromRow(rows[0])))

      const setPhase: RunStore["Service"]["setPhase"] = (runId, phase, executor) =>
        sql.withTransaction(Effect.gen(function*() {
          const run = yield* lockRun(runId, executor)
          if (run === undefined || run.phase === phase) return
          yield* sql`UPDATE runs SET phase = ${phase}, updated_at = now() WHERE id = ${runId}`
          yield* insertEvent(runId, "run.phase_changed", { run_id: runId, phase })
        })).pipe(Effect.orDie)

      return RunStore.of(withMethodSpans("RunStore", {
        createSession,
        addRun,
        createStandaloneRun,
        setPhase,
        listRuns: (projectId, kind, status, limit, beforeId) =>
          sql<Row>`
            SELECT * FROM runs
            WHERE project_id = ${projectId} AND kind = ${kind}
              ${status === undefined ? sql`` : sql`AND status = ${status}`}
              ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.orDie, Effect.map((rows) => rows.map(runFromRow))),
        getSession: (projectId, sessionId) =>
          sql`SELECT * FROM sessions WHERE id = ${sessionId} AND project_id = ${projectId}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : sessionFromRow(rows[0])),
            Effect.orDie
          ),
        listSessions: (projectId, status, limit, beforeId) =>
          sql`
            SELECT * FROM sessions
            WHERE project_id = ${projectId}
              ${status === undefined ? sql`` : sql`AND status = ${status}`}
              ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.orDie, Effect.map((rows) => rows.map(sessionFromRow))),
        runsOfSession: (sessionId) =>
          sql<Row>`SELECT * FROM runs WHERE session_id = ${sessionId} ORDER BY id`.pipe(Effect.orDie, Effect.map((rows) => rows.map(runFromRow))),
        getRun,
        findRun: (projectId, runId, kind, sessionId) =>
          getRun(runId).pipe(Effect.flatMap((run) =>
            run === undefined || run.project_id !== projectId || run.kind !== kind
              ? Effect.fail(new RunNotFound({ runId, kind }))
              : sessionId !== undefined && run.session_id !== sessionId
              ? Effect.fail(new RunNotFound({ runId, kind, sessionId }))
              : Effect.succeed(run)
          )),
        setSessionStatus: (sessionId, status) =>
          sql`UPDATE sessions SET status = ${status}, updated_at = now(),
                closed_at = CASE WHEN ${status} = 'closed' THEN now() ELSE closed_at END
              WHERE id = ${sessionId}`.pipe(Effect.asVoid, Effect.orDie),
        transition,
        appendEvent,
        appendEvents,
        eventsAfter: (runId, afterId, limit) =>
          // Order by the bigint column: the `id::text` output alias would sort "10" before "7".
          sql<{ id: string; type: string; data: Record<string, unknown>; created_at: Date }>`
            SELECT id::text, type, data, created_at FROM run_events
            WHERE run_id = ${runId} AND id > ${afterId} ORDER BY run_events.id LIMIT ${limit}`.pipe(
            Effect.map((rows) => rows.map((row) => withFreshUrls({ ...row, id: Number(row.id) }))),
            Effect.orDie
          ),
        queueMessage: (runId, content) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* lockRun(runId)
            yield* sql`INSERT INTO run_messages (run_id, content) VALUES (${runId}, ${content})`
            yield* insertEvent(runId, "run.message", { role: "user", content })
          })).pipe(Effect.orDie),
        takeMessages: (runId) =>
          sql<{ content: string }>`
            UPDATE run_messages SET consumed_at = now()
            WHERE id IN (SELECT id FROM run_messages WHERE run_id = ${runId} AND consumed_at IS NULL ORDER BY id FOR UPDATE SKIP LOCKED)
            RETURNING content`.pipe(Effect.map((rows) => rows.map((row) => row.content)), Effect.orDie),
        createInputRequest,
        answerInputRequest,
        inputRequest: (requestId) =>
          sql<{ status: string; response: unknown }>`SELECT status, response FROM input_requests WHERE id = ${requestId}`.pipe(
            Effect.map((rows) => rows[0]),
            Effect.orDie
          ),
        latestInputRequest: (runId) =>
          sql<{ id: string; status: string; response: unknown }>`
            SELECT id, status, response FROM input_requests WHERE run_id = ${runId} ORDER BY id DESC LIMIT 1`.pipe(
            Effect.map((rows) => rows[0]),
            Effect.orDie
          ),
        recordStep: (runId, executor) =>
          sql<{ step_count: number }>`
            UPDATE runs SET step_count = step_count + 1, updated_at = now()
            WHERE id = ${runId} ${executor === undefined ? sql`` : sql`AND executor = ${executor}`}
            RETURNING step_count`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) => rows[0] === undefined ? Effect.die(new SupersededExecution(runId)) : Effect.succeed(rows[0].step_count))
          ),
        claimExecution: (runId) => {
          const token = makeId("evt")
          return sql`UPDATE runs SET executor = ${token} WHERE id = ${runId}`.pipe(Effect.as(token), Effect.orDie)
        },
        completeStep: (runId, usd, checkpoint, executor, events = []) =>
          sql.withTransaction(Effect.gen(function*() {
            // Its charges add to the session's cost fields: the session is locked first.
            yield* lockSessionOfRun(runId)
            const run = yield* lockRun(runId, executor)
            if (run === undefined) return { exhausted: null, refused: false }
            yield* sql`
              INSERT INTO run_checkpoints (run_id, step, history, url, tabs, dirty_form, storage_state)
              VALUES (${runId}, ${checkpoint.step}, ${JSON.stringify(checkpoint.history)}::jsonb, ${checkpoint.url},
                ${JSON.stringify(checkpoint.tabs)}::jsonb, ${checkpoint.dirtyForm},
                ${checkpoint.storageState === undefined ? null : JSON.stringify(sealState(runId, checkpoint.storageState))}::jsonb)
              ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, history = excluded.history, url = excluded.url,
                tabs = excluded.tabs, dirty_form = excluded.dirty_form, storage_state = excluded.storage_state, updated_at = now()`
            for (const event of events) yield* insertEvent(runId, event.type, event.data)
            // One charge per (run, step) and kind: a step completed twice under at-least-once
            // execution is charged, and added to the cost fields, once. The tokens are spent and
            // the browser time used: charged even past zero (stopping the run is budget_exceeded's job).
            const charges: Array<RunCharge> = [
              { kind: "charge_llm", column: "llm", micros: toMicros(usd), idempotencyKey: `llm:${runId}:${checkpoint.step}` }
            ]
            if (run.session_id !== null) {
              // Browser time is charged once it adds up to a tenth of a cent (the run's end takes the rest).
              const browser = yield* browserDue(runId)
              if (browser >= MIN_BROWSER_STEP_MICROS) {
                charges.push({ kind: "charge_browser", column: "browser", micros: browser, idempotencyKey: `browser:${runId}:${checkpoint.step}` })
              }
            }
            return yield* applyCharges(run, charges, { step: checkpoint.step })
          })).pipe(Effect.orDie),
        chargeRun: (runId, charges, executor) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* lockSessionOfRun(runId)
            const run = yield* lockRun(runId, executor)
            if (run === undefined) return { exhausted: null, refused: false }
            return yield* applyCharges(run, charges)
          })).pipe(Effect.orDie),
        loadCheckpoint: (runId) =>
          sql<{ step: number; history: unknown; url: string | null; tabs: Array<string>; dirty_form: boolean; storage_state: unknown }>`
            SELECT step, history, url, tabs, dirty_form, storage_state FROM run_checkpoints WHERE run_id = ${runId}`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) => {
              const row = rows[0]
              if (row === undefined) return Effect.succeed(undefined)
              return openState(runId, row.storage_state).pipe(Effect.map((storageState) => ({
                step: row.step,
                history: row.history,
                url: row.url,
                tabs: row.tabs,
                dirtyForm: row.dirty_form,
                storageState
              })))
            })
          ),
        checkpointFields: (runId, fields) =>
          sql<{ fields: Record<string, unknown> | null }>`
            SELECT (SELECT jsonb_object_agg(key, value) FROM jsonb_each(history) WHERE key IN ${sql.in(fields)}) AS fields
            FROM run_checkpoints WHERE run_id = ${runId}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : rows[0].fields ?? {}),
            Effect.orDie
          ),
        rewindSteps: (runId, step) =>
          sql`UPDATE runs SET step_count = ${step}, updated_at = now() WHERE id = ${runId}`.pipe(Effect.asVoid, Effect.orDie),
        setFeedback: (runId, feedback) =>
          sql`UPDATE runs SET feedback = ${JSON.stringify(feedback)}::jsonb WHERE id = ${runId}`.pipe(Effect.asVoid, Effect.orDie)
      }))
    })
  ).pipe(Layer.provide(Layer.mergeAll(StateCipher.layer, ScreenshotStore.layer)))
}

/** The four cost fields of the spec, exact to the micro-dollar (src/domain/money.ts). */
export const costFields = (session: Pick<Session, "llm_cost_usd" | "browser_cost_usd" | "proxy_cost_usd">) => ({
  llm_cost_usd: usd(session.llm_cost_usd),
  browser_cost_usd: usd(session.browser_cost_usd),
  proxy_cost_usd: usd(session.proxy_cost_usd),
  total_cost_usd: usdSum(session.llm_cost_usd, session.browser_cost_usd, session.proxy_cost_usd)
})

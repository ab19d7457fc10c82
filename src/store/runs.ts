/**
 * Runs and their event logs in PostgreSQL. A run's state change and the event that reports it are
 * written in one transaction; event ids increase by one per run (the run row is locked while the
 * next id is taken, src/store/run-log.ts), and every new event is announced with NOTIFY so SSE
 * streams on any node wake up. A step's checkpoint, its events and its charges
 * (src/billing/store/run-charges.ts) commit together. Sessions are src/store/sessions.ts.
 */
import { Context, Effect, identity, Layer, Option, Schema } from "effect"
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
  RunNotAwaitingInput,
  RunNotFound,
  RunCapReached
} from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import { ExecutionToken, InputRequestId } from "../domain/id-schemas.ts"
import { decodeRows } from "../domain/rows.ts"
import { kindOfTag, type Run, runFromRow, type RunId, type RunKind, type RunRequest, type ProjectId, type SessionId, type StoredRunKind, storedRequest } from "../domain/run.ts"
import { canTransition, isTerminal, type RunStatus, type TerminalReason } from "../domain/run-state.ts"
import { toMicros } from "../domain/money.ts"
import type { EventData, NewRunEvent, RunEventType, StatusChangeExtra } from "../domain/events.ts"
import type { Phase } from "../domain/research.ts"
import { releaseHoldInTransaction } from "../billing/store/credit-holds.ts"
import { AppConfig } from "../config/config.ts"
import { admitRunInFlight, oneAdmissionAtATime, RunStartedBy } from "./run-admission.ts"
import { type ChargeResult, makeRunCharges, MIN_BROWSER_STEP_MICROS, type RunCharge } from "../billing/store/run-charges.ts"
import { eventsAfter, insertEvent, lockRun, recordCostUpdate, lockSessionOfRun, type RunEvent, SupersededExecution } from "./run-log.ts"

export { EVENTS_CHANNEL, type RunEvent, SupersededExecution } from "./run-log.ts"
export { type ChargeResult, costFields, type CostColumn, type RunCharge } from "../billing/store/run-charges.ts"

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

export interface TransitionOptions {
  readonly terminalReason?: TerminalReason
  readonly output?: unknown
  readonly errorCode?: string
  readonly errorDetail?: string
  readonly expired?: boolean
  /** Extra data for the status_changed event (src/domain/events.ts). */
  readonly data?: StatusChangeExtra
  /** The execution making the change (see claimExecution); a superseded one is refused. */
  readonly executor?: ExecutionToken
}

/** A new execution's token, as `claimExecution` writes it (a kind with a record of its own claims in its start). */
export const newExecutionToken = (): ExecutionToken => makeId("evt")

/** A checkpoint's browser state as sealed (src/security/state-cipher.ts): the key's id and the sealed bytes in base64. */
const SealedState = Schema.Struct({ wa_sealed: Schema.Number, key_id: Schema.String, data: Schema.String })
const decodeSealedState = Schema.decodeUnknownOption(SealedState)

const InputRequestStatusRow = Schema.Struct({ status: Schema.String })
const InputRequestRow = Schema.Struct({ status: Schema.String, response: Schema.Unknown })
const LatestInputRequestRow = Schema.Struct({ id: InputRequestId, status: Schema.String, response: Schema.Unknown })
const MessageRow = Schema.Struct({ content: Schema.String })
const StepCountRow = Schema.Struct({ step_count: Schema.Number })
const ExecutorRow = Schema.Struct({ executor: Schema.NullOr(ExecutionToken) })
/** The named top-level fields of a checkpoint's history (null: none of them is there). */
const CheckpointFieldsRow = Schema.Struct({ fields: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)) })
const CheckpointRow = Schema.Struct({
  step: Schema.Number,
  history: Schema.Unknown,
  url: Schema.NullOr(Schema.String),
  tabs: Schema.Array(Schema.String),
  dirty_form: Schema.Boolean,
  storage_state: Schema.Unknown
})

export class RunStore extends Context.Service<RunStore, {
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
  readonly setPhase: (runId: RunId, phase: Phase, executor?: ExecutionToken) => Effect.Effect<void>
  /**
   * getRun, transition, appendEvent and eventsAfter still take a plain string: the SSE stream, the
   * event bus, the SSE bench and the in-process test helpers call them with one (a RunId is one).
   * getRun without a kind reads the runs of the run APIs' kinds; with one (the run kernel's
   * executor's), only a run of that kind: a Track tick (kind track_tick) is read only that way.
   */
  readonly getRun: (runId: RunId, kind?: StoredRunKind) => Effect.Effect<Run | undefined>
  /** The run of that kind in the project (and in that session, when one is named), or RunNotFound. */
  readonly findRun: (projectId: ProjectId, runId: RunId, kind: RunKind, sessionId?: SessionId) => Effect.Effect<Run, RunNotFound>
  readonly transition: (runId: RunId, to: RunStatus, options?: TransitionOptions) => Effect.Effect<Run, RunNotFound | InvalidTransition>
  /** Appends an event; its payload is the one its type's schema describes (src/domain/events.ts). */
  readonly appendEvent: <T extends RunEventType>(runId: RunId, type: T, data: EventData<T>, executor?: ExecutionToken) => Effect.Effect<number>
  /** Appends events in order in one transaction (a batch of a run's progress). */
  readonly appendEvents: (runId: RunId, events: ReadonlyArray<NewRunEvent>, executor?: ExecutionToken) => Effect.Effect<void>
  /** Makes a new execution the owner of the run and returns its token. */
  readonly claimExecution: (runId: RunId) => Effect.Effect<ExecutionToken>
  /** Whether the execution `token` still holds the run's claim (no later execution claimed it). */
  readonly holdsClaim: (runId: RunId, token: ExecutionToken) => Effect.Effect<boolean>
  /** Events after `afterId`, oldest first; screenshot URLs in them are signed at the time of reading. */
  readonly eventsAfter: (runId: RunId, afterId: number, limit: number) => Effect.Effect<ReadonlyArray<RunEvent>>
  readonly queueMessage: (runId: RunId, content: string) => Effect.Effect<void>
  readonly takeMessages: (runId: RunId) => Effect.Effect<ReadonlyArray<string>>
  readonly createInputRequest: (runId: RunId, prompt: string, schema: unknown, executor?: ExecutionToken) => Effect.Effect<InputRequestId, InvalidTransition>
  readonly answerInputRequest: (runId: RunId, requestId: InputRequestId, response: unknown) => Effect.Effect<void, InputRequestNotFound | InputRequestAnswered | RunNotAwaitingInput>
  readonly inputRequest: (requestId: InputRequestId) => Effect.Effect<{ readonly status: string; readonly response: unknown } | undefined>
  /** The run's newest input request, if it has any. */
  readonly latestInputRequest: (runId: RunId) => Effect.Effect<{ readonly id: InputRequestId; readonly status: string; readonly response: unknown } | undefined>
  readonly recordStep: (runId: RunId, executor?: ExecutionToken) => Effect.Effect<number>
  /**
   * Ends a step: its model cost is charged and the checkpoint saved in one transaction, so a step
   * interrupted before this point is neither charged nor remembered, and is done again on resume.
   */
  /** Saves the checkpoint, adds the step's cost, and appends `events` (progress of that step), in one transaction. */
  readonly completeStep: (runId: RunId, costUsd: number, checkpoint: Checkpoint, executor?: ExecutionToken, events?: ReadonlyArray<NewRunEvent>) => Effect.Effect<ChargeResult>
  /**
   * Charges costs of a run that are not a step's (a product fee), each once per idempotency key,
   * adding them to the run's (and its session's) cost fields, with a `run.cost_update` event.
   */
  readonly chargeRun: (runId: RunId, charges: ReadonlyArray<RunCharge>, executor?: ExecutionToken) => Effect.Effect<ChargeResult>
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
      const sealState = (runId: RunId, state: unknown) => {
        const sealed = cipher.seal(Buffer.from(JSON.stringify(state)), runId)
        return { wa_sealed: 1, key_id: sealed.keyId, data: sealed.bytes.toString("base64") }
      }
      const openState = (runId: RunId, stored: unknown) =>
        Effect.gen(function*() {
          if (stored === null || stored === undefined) return undefined
          if (typeof stored !== "object" || !("wa_sealed" in stored)) return stored
          const sealed = decodeSealedState(stored)
          const opened = Option.isNone(sealed)
            ? undefined
            : yield* Effect.result(cipher.open({ bytes: Buffer.from(sealed.value.data, "base64"), keyId: sealed.value.key_id }, runId))
          if (opened?._tag === "Success") return JSON.parse(opened.success.toString("utf8")) as unknown
          // The run resumes without the checkpoint's cookies (its tabs are still reopened).
          yield* Effect.logWarning("a run checkpoint's browser state could not be decrypted; resuming without it").pipe(
            Effect.annotateLogs({ run_id: runId, reason: opened === undefined ? "not {wa_sealed, key_id, data}" : opened.failure.reason })
          )
          return undefined
        })

      const { billing, holdFor, browserDue, applyCharges } = yield* makeRunCharges(recordCostUpdate)
      const appConfig = yield* Effect.serviceOption(AppConfig)
      // The cap on a project's runs in flight (src/store/run-admission.ts); none without the config (store tests).
      const maxRunsInFlight = Option.match(appConfig, { onNone: () => undefined, onSome: (c) => c.maxConcurrentRuns })
      // A key's share of them (unset: the project's cap, so one key may fill its project's share).
      const maxRunsPerKey = Option.match(appConfig, { onNone: () => undefined, onSome: (c) => Option.getOrElse(c.maxConcurrentRunsPerKey, () => c.maxConcurrentRuns) })

      const transition: RunStore["Service"]["transition"] = (runId, to, options = {}) =>
        sql.withTransaction(Effect.gen(function*() {
          // The run's end writes its session (status, browser cost): the session is locked first.
          yield* lockSessionOfRun(sql, runId)
          const run = yield* lockRun(sql, runId, options.executor)
          if (run === undefined) return yield* new RunNotFound({ runId })
          if (!canTransition(run.status, to)) return yield* new InvalidTransition({ runId, from: run.status, to })
          const terminal = isTerminal(to)
          // The run's browser time up to its end, in the transaction that ends it.
          if (terminal && run.session_id !== null) {
            yield* applyCharges(run, [{ kind: "charge_browser", column: "browser", micros: yield* browserDue(runId), idempotencyKey: `browser:${runId}:end` }], { final: true })
          }
          const rows = yield* sql`
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
          yield* insertEvent(sql, runId, "run.status_changed", { run_id: runId, from: run.status, status: to, ...options.data })
          if (terminal) {
            // Its charges are in the ledger: the run's credit hold is settled.
            if (billing) yield* releaseHoldInTransaction(sql, runId)
            yield* insertEvent(sql, runId, "run.completed", {
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
        events.length === 0 ? Effect.void : sql.withTransaction(lockRun(sql, runId, executor).pipe(
          Effect.andThen(Effect.forEach(events, (event) => insertEvent(sql, runId, event.type, event.data), { discard: true }))
        )).pipe(Effect.orDie)

      const appendEvent: RunStore["Service"]["appendEvent"] = <T extends RunEventType>(runId: RunId, type: T, data: EventData<T>, executor?: ExecutionToken) =>
        sql.withTransaction(lockRun(sql, runId, executor).pipe(Effect.andThen(insertEvent(sql, runId, type, data)))).pipe(Effect.orDie)

      const createInputRequest: RunStore["Service"]["createInputRequest"] = (runId, prompt, schema, executor) =>
        sql.withTransaction(Effect.gen(function*() {
          const run = yield* lockRun(sql, runId, executor)
          if (run === undefined || run.status !== "running") {
            return yield* new InvalidTransition({ runId, from: run?.status ?? "pending", to: "awaiting_input" })
          }
          const id = makeId("ir")
          yield* sql`INSERT INTO input_requests (id, run_id, prompt, schema) VALUES (${id}, ${runId}, ${prompt}, ${schema === undefined ? null : JSON.stringify(schema)}::jsonb)`
          yield* sql`UPDATE runs SET status = 'awaiting_input', updated_at = now() WHERE id = ${runId}`
          yield* insertEvent(sql, runId, "run.status_changed", { run_id: runId, from: "running", status: "awaiting_input" })
          yield* insertEvent(sql, runId, "run.input_request", { input_request_id: id, request_id: id, prompt, schema: schema ?? null })
          return id
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      const answerInputRequest: RunStore["Service"]["answerInputRequest"] = (runId, requestId, response) =>
        sql.withTransaction(Effect.gen(function*() {
          const run = yield* lockRun(sql, runId)
          const requests = yield* decodeRows(InputRequestStatusRow)(
            sql`SELECT status FROM input_requests WHERE id = ${requestId} AND run_id = ${runId} FOR UPDATE`
          )
          if (requests[0] === undefined) return yield* new InputRequestNotFound({ inputRequestId: requestId, field: "input_request_id" })
          if (requests[0].status !== "pending") return yield* new InputRequestAnswered({ inputRequestId: requestId })
          if (run === undefined || run.status !== "awaiting_input") return yield* new RunNotAwaitingInput({ runId, status: run?.status ?? "pending" })
          yield* sql`UPDATE input_requests SET status = 'answered', response = ${JSON.stringify(response)}::jsonb, resolved_at = now() WHERE id = ${requestId}`
          yield* sql`UPDATE runs SET status = 'running', updated_at = now() WHERE id = ${runId}`
          yield* insertEvent(sql, runId, "run.input_request_resolved", { input_request_id: requestId, request_id: requestId })
          yield* insertEvent(sql, runId, "run.status_changed", { run_id: runId, from: "awaiting_input", status: "running" })
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      const createStandaloneRun: RunStore["Service"]["createStandaloneRun"] = (projectId, request, options = {}) =>
        sql.withTransaction(Effect.gen(function*() {
          const startedBy = yield* RunStartedBy
          if (maxRunsInFlight !== undefined) {
            yield* admitRunInFlight(sql, projectId, maxRunsInFlight, startedBy === undefined || maxRunsPerKey === undefined ? undefined : { id: startedBy, limit: maxRunsPerKey })
          }
          const deadline = options.maxDurationMs === undefined ? null : `${options.maxDurationMs} milliseconds`
          const rows = yield* sql`
            INSERT INTO runs (id, session_id, project_id, kind, status, request, max_steps, deadline_at, parent_run_id, instructions, api_key_id)
            VALUES (${makeId("run")}, NULL, ${projectId}, ${kindOfTag[request._tag]}, 'pending', ${JSON.stringify(storedRequest(request))}::jsonb, 0,
              CASE WHEN ${deadline}::text IS NULL THEN NULL ELSE now() + ${deadline}::interval END,
              ${options.parentRunId ?? null}, ${options.instructions ?? null}, ${startedBy ?? null})
            RETURNING *`
          const run = runFromRow(rows[0]!)
          yield* holdFor(run)
          yield* insertEvent(sql, run.id, "run.status_changed", { run_id: run.id, from: null, status: "pending" })
          return run
        })).pipe(maxRunsInFlight === undefined ? identity : oneAdmissionAtATime(projectId), Effect.catchTag("SqlError", Effect.die))

      const getRun: RunStore["Service"]["getRun"] = (runId, kind) =>
        // A Track tick is a run too (kind track_tick), in Track's shape (src/track/monitor-store.ts):
        // not one of the runs the run APIs read, only the run kernel's for its tick executor.
        sql`SELECT * FROM runs WHERE id = ${runId} AND ${kind === undefined ? sql`kind <> 'track_tick'` : sql`kind = ${kind}`}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0] === undefined ? undefined : runFromRow(rows[0]))
        )

      const setPhase: RunStore["Service"]["setPhase"] = (runId, phase, executor) =>
        sql.withTransaction(Effect.gen(function*() {
          const run = yield* lockRun(sql, runId, executor)
          if (run === undefined || run.phase === phase) return
          yield* sql`UPDATE runs SET phase = ${phase}, updated_at = now() WHERE id = ${runId}`
          yield* insertEvent(sql, runId, "run.phase_changed", { run_id: runId, phase })
        })).pipe(Effect.orDie)

      return RunStore.of(withMethodSpans("RunStore", {
        createStandaloneRun,
        setPhase,
        listRuns: (projectId, kind, status, limit, beforeId) =>
          sql`
            SELECT * FROM runs
            WHERE project_id = ${projectId} AND kind = ${kind}
              ${status === undefined ? sql`` : sql`AND status = ${status}`}
              ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.orDie, Effect.map((rows) => rows.map(runFromRow))),
        getRun,
        findRun: (projectId, runId, kind, sessionId) =>
          getRun(runId).pipe(Effect.flatMap((run) =>
            run === undefined || run.project_id !== projectId || run.kind !== kind
              ? Effect.fail(new RunNotFound({ runId, kind }))
              : sessionId !== undefined && run.session_id !== sessionId
              ? Effect.fail(new RunNotFound({ runId, kind, sessionId }))
              : Effect.succeed(run)
          )),
        transition,
        appendEvent,
        appendEvents,
        eventsAfter: (runId, afterId, limit) =>
          eventsAfter(sql, runId, afterId, limit).pipe(Effect.map((events) => events.map(withFreshUrls)), Effect.orDie),
        queueMessage: (runId, content) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* lockRun(sql, runId)
            yield* sql`INSERT INTO run_messages (run_id, content) VALUES (${runId}, ${content})`
            yield* insertEvent(sql, runId, "run.message", { role: "user", content })
          })).pipe(Effect.orDie),
        takeMessages: (runId) =>
          decodeRows(MessageRow)(sql`
            UPDATE run_messages SET consumed_at = now()
            WHERE id IN (SELECT id FROM run_messages WHERE run_id = ${runId} AND consumed_at IS NULL ORDER BY id FOR UPDATE SKIP LOCKED)
            RETURNING content`).pipe(Effect.map((rows) => rows.map((row) => row.content))),
        createInputRequest,
        answerInputRequest,
        inputRequest: (requestId) =>
          decodeRows(InputRequestRow)(sql`SELECT status, response FROM input_requests WHERE id = ${requestId}`).pipe(
            Effect.map((rows) => rows[0])
          ),
        latestInputRequest: (runId) =>
          decodeRows(LatestInputRequestRow)(sql`
            SELECT id, status, response FROM input_requests WHERE run_id = ${runId} ORDER BY id DESC LIMIT 1`).pipe(
            Effect.map((rows) => rows[0])
          ),
        recordStep: (runId, executor) =>
          decodeRows(StepCountRow)(sql`
            UPDATE runs SET step_count = step_count + 1, updated_at = now()
            WHERE id = ${runId} ${executor === undefined ? sql`` : sql`AND executor = ${executor}`}
            RETURNING step_count`).pipe(
            Effect.flatMap((rows) => rows[0] === undefined ? Effect.die(new SupersededExecution(runId)) : Effect.succeed(rows[0].step_count))
          ),
        claimExecution: (runId) => {
          const token = newExecutionToken()
          return sql`UPDATE runs SET executor = ${token} WHERE id = ${runId}`.pipe(Effect.as(token), Effect.orDie)
        },
        holdsClaim: (runId, token) =>
          decodeRows(ExecutorRow)(sql`SELECT executor FROM runs WHERE id = ${runId}`).pipe(
            Effect.map((rows) => rows[0]?.executor === token)
          ),
        completeStep: (runId, usd, checkpoint, executor, events = []) =>
          sql.withTransaction(Effect.gen(function*() {
            // Its charges add to the session's cost fields: the session is locked first.
            yield* lockSessionOfRun(sql, runId)
            const run = yield* lockRun(sql, runId, executor)
            if (run === undefined) return { exhausted: null, refused: false }
            yield* sql`
              INSERT INTO run_checkpoints (run_id, step, history, url, tabs, dirty_form, storage_state)
              VALUES (${runId}, ${checkpoint.step}, ${JSON.stringify(checkpoint.history)}::jsonb, ${checkpoint.url},
                ${JSON.stringify(checkpoint.tabs)}::jsonb, ${checkpoint.dirtyForm},
                ${checkpoint.storageState === undefined ? null : JSON.stringify(sealState(runId, checkpoint.storageState))}::jsonb)
              ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, history = excluded.history, url = excluded.url,
                tabs = excluded.tabs, dirty_form = excluded.dirty_form, storage_state = excluded.storage_state, updated_at = now()`
            for (const event of events) yield* insertEvent(sql, runId, event.type, event.data)
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
            yield* lockSessionOfRun(sql, runId)
            const run = yield* lockRun(sql, runId, executor)
            if (run === undefined) return { exhausted: null, refused: false }
            return yield* applyCharges(run, charges)
          })).pipe(Effect.orDie),
        loadCheckpoint: (runId) =>
          decodeRows(CheckpointRow)(sql`
            SELECT step, history, url, tabs, dirty_form, storage_state FROM run_checkpoints WHERE run_id = ${runId}`).pipe(
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
          decodeRows(CheckpointFieldsRow)(sql`
            SELECT (SELECT jsonb_object_agg(key, value) FROM jsonb_each(history) WHERE key IN ${sql.in(fields)}) AS fields
            FROM run_checkpoints WHERE run_id = ${runId}`).pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : rows[0].fields ?? {})
          ),
        rewindSteps: (runId, step) =>
          sql`UPDATE runs SET step_count = ${step}, updated_at = now() WHERE id = ${runId}`.pipe(Effect.asVoid, Effect.orDie),
        setFeedback: (runId, feedback) =>
          sql`UPDATE runs SET feedback = ${JSON.stringify(feedback)}::jsonb WHERE id = ${runId}`.pipe(Effect.asVoid, Effect.orDie)
      }))
    })
  ).pipe(Layer.provide(Layer.mergeAll(StateCipher.layer, ScreenshotStore.layer)))
}


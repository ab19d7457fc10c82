/**
 * Creating a run and handing it to the entity that executes it: the kernel's, once, for every
 * product (DoAnything's sessions and their follow-up runs, DeepResearch, WebSearch, Track's
 * monitors and their run_now ticks). A product gives its insert (with what else belongs in its
 * transaction) and how its entity is told; the kernel does the rest, in this order:
 * - keyed-create recovery: under an Idempotency-Key, the retry of a create whose first attempt
 *   committed before its process died gets what that attempt created (`existing`, by the id the
 *   claim recorded), its work handed on now if that attempt never persisted the message that
 *   does it (what was to happen before the dispatch, `beforeDispatch`, first);
 * - the product's rules (`check`: a 422, a 404, a 409), which may read what the insert needs;
 * - the 402 pre-check (`admit`: Budget.admit, the budget cap and the minimum balance) before
 *   anything is written;
 * - the insert and the create's record on the Idempotency-Key claim in one transaction
 *   (src/store/keyed-create.ts); the admission proper is the store's, in that transaction (the
 *   caps and the credit hold, src/store/runs.ts `createStandaloneRun`, src/store/sessions.ts;
 *   the plan's cap on monitors, src/track/service.ts);
 * - the dispatch, after the commit.
 * `create` is that for a run its entity executes (one Execute per run); `createWith` is the same
 * for any work handed on by one persisted message (a monitor's first alignment step, a run_now
 * tick's `Tick`), or by none (a direct monitor's first tick is its schedule's). A scheduled run
 * (a session schedule's firing) is admitted by `admitAndInsert`, the same two middle steps, in the
 * firing's transaction: it dispatches after that transaction commits.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Budget } from "../billing/budget.ts"
import type { BudgetExceeded, InsufficientCredits } from "../domain/errors.ts"
import { type ProjectId, type Run, RunId } from "../domain/run.ts"
import { earlierCreate, messageSent, recordCreate } from "../store/keyed-create.ts"
import { RunStore } from "../store/runs.ts"

/** A new run's admission and insert (`admitAndInsert`): `Created` is what the insert makes (a run, a session with its first run). */
export interface RunAdmission<Created, E> {
  readonly projectId: ProjectId
  /**
   * Whether the 402 pre-check (Budget.admit) runs before anything is written. False where the
   * store's credit hold, in the insert's transaction, is the only check (DoAnything: its hold is
   * the minimum balance that check asks for, and the caps counted in the insert answer first).
   */
  readonly admit: boolean
  /** The insert (which admits the run: caps, credit hold) and what else belongs in its transaction. */
  readonly insert: Effect.Effect<Created, E>
  /** The id the Idempotency-Key claim records for the create (the run's, or its session's). */
  readonly idOf: (created: Created) => string
  /**
   * How one attempt of the insert's transaction is retried (DoAnything: a profile whose holder is
   * closing is waited for); absent: once.
   */
  readonly attempts?: (attempt: Effect.Effect<Created, E>) => Effect.Effect<Created, E>
}

/**
 * The persisted message that hands a create's work to its entity, as a recovered create looks it
 * up in the cluster's message storage (src/store/keyed-create.ts `messageSent`).
 */
export interface Handoff {
  /** The cluster entity type ("Session", "DeepResearch", "WebSearch", "Monitor"). */
  readonly entityType: string
  readonly entityId: string
  /** The message's tag ("Execute"; a monitor's "Align", "Tick"). */
  readonly tag: string
  /** Text its payload holds, where the entity gets many such messages (a session's runs, a monitor's ticks): the run's id. */
  readonly payloadHas?: string
}

/** A create for a request (`createWith`): the admission, the recovery of a keyed retry, the product's rules, the dispatch. */
export interface KeyedCreate<Created, Checked, E, EC> extends Omit<RunAdmission<Created, E>, "insert"> {
  /** The product's rules, checked when the create is not a keyed retry's recovery; gives what the insert needs. */
  readonly check: Effect.Effect<Checked, EC>
  readonly insert: (checked: Checked) => Effect.Effect<Created, E>
  /** What an earlier attempt under the request's key created, by its recorded id (undefined: gone, or not this create's). */
  readonly existing: (id: string) => Effect.Effect<Created | undefined>
  /**
   * The message `dispatch` persists, as a recovered create asks whether it was ever sent; undefined
   * when nothing is owed (the work is under way or over, or something else starts it).
   */
  readonly handoff: (created: Created) => Handoff | undefined
  /** Sends it (fire-and-forget: it reaches the entity even if this request is gone). */
  readonly dispatch: (created: Created) => Effect.Effect<void>
  /** Done once the create is stored, before its dispatch (the interactive login records its login session). */
  readonly beforeDispatch?: (created: Created) => Effect.Effect<void>
}

/** A run's create for a request (`create`): the run its entity executes, by one persisted Execute. */
export interface RunCreate<Created, Checked, E, EC> extends Omit<KeyedCreate<Created, Checked, E, EC>, "handoff" | "dispatch"> {
  /** The run the create made, which the entity executes. */
  readonly runOf: (created: Created) => Run
  /** The entity that executes the run. */
  readonly executor: {
    /** Its cluster entity type ("Session", "DeepResearch", "WebSearch"). */
    readonly entityType: string
    readonly entityId: (created: Created) => string
    /** The entity executes many runs (a session's), one Execute each: the run's id picks out its message. */
    readonly manyRuns: boolean
    /** Sends the run's persisted Execute (fire-and-forget: it reaches the entity even if this request is gone). */
    readonly dispatch: (created: Created) => Effect.Effect<void>
  }
}

export const makeRunCreate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const budget = yield* Budget

  /**
   * The 402 pre-check (when asked), then the insert and the create's record in one transaction
   * (a savepoint of the caller's, when it has one). Dispatches nothing.
   */
  const admitAndInsert = <Created, E>(admission: RunAdmission<Created, E>): Effect.Effect<Created, E | BudgetExceeded | InsufficientCredits> =>
    Effect.gen(function*() {
      if (admission.admit) yield* budget.admit(admission.projectId)
      const attempt = sql.withTransaction(Effect.tap(admission.insert, (created) => recordCreate(sql, admission.idOf(created)))).pipe(
        Effect.catchTag("SqlError", Effect.die)
      )
      return yield* (admission.attempts === undefined ? attempt : admission.attempts(attempt))
    })

  const createWith = <Created, Checked, E, EC>(spec: KeyedCreate<Created, Checked, E, EC>): Effect.Effect<Created, E | EC | BudgetExceeded | InsufficientCredits> =>
    Effect.gen(function*() {
      const dispatch = (created: Created) =>
        (spec.beforeDispatch === undefined ? Effect.void : spec.beforeDispatch(created)).pipe(Effect.andThen(spec.dispatch(created)))
      const earlier = yield* earlierCreate(spec.existing)
      if (earlier !== undefined) {
        // One that was handed on is delivered again by the cluster on its own.
        const handoff = spec.handoff(earlier)
        const sent = handoff === undefined || (yield* messageSent(sql, handoff.entityType, handoff.entityId, handoff.tag, handoff.payloadHas))
        if (!sent) yield* dispatch(earlier)
        return earlier
      }
      const checked = yield* spec.check
      const created = yield* admitAndInsert({ ...spec, insert: spec.insert(checked) })
      yield* dispatch(created)
      return created
    })

  const create = <Created, Checked, E, EC>(spec: RunCreate<Created, Checked, E, EC>): Effect.Effect<Created, E | EC | BudgetExceeded | InsufficientCredits> => {
    const { executor, runOf, ...rest } = spec
    return createWith({
      ...rest,
      // A run no longer pending was dispatched (its entity took it).
      handoff: (created) => {
        const run = runOf(created)
        return run.status !== "pending" ? undefined : {
          entityType: executor.entityType,
          entityId: executor.entityId(created),
          tag: "Execute",
          ...(executor.manyRuns ? { payloadHas: run.id } : {})
        }
      },
      dispatch: executor.dispatch
    })
  }

  return { create, createWith, admitAndInsert }
})

/**
 * A standalone run's create (DeepResearch, WebSearch: no session; its entity is addressed by the
 * run's id): the kernel's create, with the 402 pre-check.
 */
export const makeStandaloneCreate = Effect.gen(function*() {
  const store = yield* RunStore
  const { create } = yield* makeRunCreate
  return <E>(options: {
    readonly projectId: ProjectId
    /** The entity type whose persisted Execute dispatches the run ("DeepResearch", "WebSearch"). */
    readonly entityType: string
    /** The run's insert, and what else belongs in its transaction (a derived run's first checkpoint). */
    readonly insert: Effect.Effect<Run, E>
    /** Sends the run's persisted Execute (fire-and-forget: it reaches the entity even if this request is gone). */
    readonly dispatch: (runId: RunId) => Effect.Effect<void>
  }): Effect.Effect<Run, E | BudgetExceeded | InsufficientCredits> =>
    create({
      projectId: options.projectId,
      admit: true,
      check: Effect.void,
      insert: () => options.insert,
      idOf: (run) => run.id,
      existing: (id) => store.getRun(RunId.make(id)).pipe(Effect.map((run) => run?.project_id === options.projectId ? run : undefined)),
      runOf: (run) => run,
      executor: { entityType: options.entityType, entityId: (run) => run.id, manyRuns: false, dispatch: (run) => options.dispatch(run.id) }
    })
})

/**
 * Creates that survive a crash under an Idempotency-Key. The transaction that creates a resource
 * also writes the new resource's id onto the request's idempotency claim, so the write and the
 * fact that it happened commit together. When the process dies after that commit but before the
 * response was kept, the retry (after the claim's lease) takes the claim over with the id on it
 * and gets the resource that exists instead of a second one; its handler renders the response
 * from it (src/http/middleware/idempotency.ts provides the claim).
 *
 * Only the insert is in that transaction: work that other fibers pick up (a run's Execute message)
 * is dispatched after the commit as before, and nothing waits with a transaction open.
 */
import { Context, Data, Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { RunId, SessionId } from "../domain/run.ts"
import { decodeRows } from "../domain/rows.ts"

/** The Idempotency-Key claim the current request holds (undefined outside keyed writes). */
export interface KeyedClaim {
  /** The claim's primary key: where the caller acts, who it is, the key. */
  readonly space: string
  readonly callerId: string
  readonly key: string
  /** This attempt's token: a claim taken over by a later attempt no longer records this one's writes. */
  readonly attempt: string
  /** The resource an earlier attempt with this key created (and committed), if any. */
  readonly createdId: string | null
}

export const KeyedRequest = Context.Reference<KeyedClaim | undefined>("wa/store/KeyedRequest", { defaultValue: () => undefined })

/**
 * The claim was taken over by another attempt (this one outlived its lease): the create is rolled
 * back. The idempotency layer answers it as 409, like any request whose key is in flight.
 */
export class ClaimLost extends Data.TaggedError("ClaimLost")<{ readonly key: string }> {}

/**
 * The resource an earlier attempt with the request's Idempotency-Key created and committed, as
 * `existing(id)` finds it; undefined without a key, without one, or when it is gone since.
 */
export const earlierCreate = <A, E, R>(existing: (id: string) => Effect.Effect<A | undefined, E, R>): Effect.Effect<A | undefined, E, R> =>
  Effect.gen(function*() {
    const claim = yield* KeyedRequest
    return claim === undefined || claim.createdId === null ? undefined : yield* existing(claim.createdId)
  })

/**
 * Records `id` as the request's created resource on its claim; call it inside the transaction that
 * creates the resource (nothing without a key). The first create of a request is the one recorded
 * (a later one of the same request, as a login's session after its profile, keeps it). Dies with
 * ClaimLost, rolling the create back, when this attempt no longer holds the claim.
 */
export const recordCreate = (sql: SqlClient.SqlClient, id: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    const claim = yield* KeyedRequest
    if (claim === undefined) return
    const rows = yield* sql`
      UPDATE idempotency_records
      SET resource_id = CASE WHEN resource_id IS NULL OR resource_id = ${claim.createdId} THEN ${id} ELSE resource_id END
      WHERE project_id = ${claim.space} AND api_key_id = ${claim.callerId} AND idempotency_key = ${claim.key}
        AND attempt = ${claim.attempt} AND status IS NULL
      RETURNING 1`.pipe(Effect.orDie)
    if (rows.length !== 1) return yield* Effect.die(new ClaimLost({ key: claim.key }))
  })

/**
 * Runs `create` at most once per Idempotency-Key: the earlier attempt's resource when there is
 * one (earlierCreate), else `create` in a transaction that records the new id (`idOf`) on the
 * claim (recordCreate). Without a key it is `create` as is.
 */
export const createOnce = <A, E, R, E2, R2>(
  sql: SqlClient.SqlClient,
  create: Effect.Effect<A, E, R>,
  idOf: (created: A) => string,
  existing: (id: string) => Effect.Effect<A | undefined, E2, R2>
): Effect.Effect<A, E | E2, R | R2> =>
  Effect.gen(function*() {
    if ((yield* KeyedRequest) === undefined) return yield* create
    const earlier = yield* earlierCreate(existing)
    if (earlier !== undefined) return earlier
    return yield* sql.withTransaction(Effect.tap(create, (created) => recordCreate(sql, idOf(created)))).pipe(
      Effect.catchTag("SqlError", Effect.die)
    )
  }) as Effect.Effect<A, E | E2, R | R2>

/**
 * Whether a persisted message `tag` was ever sent to an entity, read from the cluster's message
 * storage (SqlMessageStorage, table prefix "cluster"): a recovered create dispatches its run only
 * when the attempt that died never did. False when it cannot be read (then it is sent: a run's
 * entity ignores an Execute for a run that is no longer pending). `payloadHas`: only a message
 * whose serialised payload contains it (an entity that gets one message per run, as a session's
 * follow-up runs, is asked about one run: its id).
 */
export const messageSent = (sql: SqlClient.SqlClient, entityType: string, entityId: string, tag: string, payloadHas?: string): Effect.Effect<boolean> =>
  sql`SELECT 1 FROM cluster_messages WHERE entity_type = ${entityType} AND entity_id = ${entityId} AND tag = ${tag}
      ${payloadHas === undefined ? sql`` : sql`AND position(${payloadHas} in payload) > 0`} LIMIT 1`.pipe(
    Effect.map((rows) => rows.length > 0),
    Effect.orElseSucceed(() => false)
  )

/** The cluster entity that executes each kind of run, and how it is addressed (by session or by run). */
const executorEntity = { do_anything: "Session", deep_research: "DeepResearch", web_search: "WebSearch" } as const

/** A run `undispatchedRuns` found, decoded from its row. */
const UndispatchedRun = Schema.Struct({
  id: RunId,
  kind: Schema.Literals(["do_anything", "deep_research", "web_search"]),
  session_id: Schema.NullOr(SessionId)
})
export type UndispatchedRun = typeof UndispatchedRun.Type

/**
 * Runs still pending `olderThanSeconds` after their insert with no Execute message ever persisted
 * to their entity: their creating request died between its commit and its dispatch. Dispatched by
 * the sweep in src/runs/undispatched.ts, so such a run does not wait for a retry that may never
 * come (a retry with its key dispatches it too; the second Execute is ignored). A Track tick (a
 * run of kind track_tick) is not one of these: its Monitor entity's persisted message runs it.
 */
export const undispatchedRuns = (sql: SqlClient.SqlClient, olderThanSeconds: number) =>
  decodeRows(UndispatchedRun)(sql`
    SELECT r.id, r.kind, r.session_id FROM runs r
    WHERE r.status = 'pending' AND r.kind IN ('do_anything', 'deep_research', 'web_search')
      AND r.created_at < now() - make_interval(secs => ${olderThanSeconds})
      AND NOT EXISTS (
        SELECT 1 FROM cluster_messages m
        WHERE m.tag = 'Execute' AND (
          (r.kind = 'do_anything' AND m.entity_type = ${executorEntity.do_anything} AND m.entity_id = r.session_id AND position(r.id in m.payload) > 0)
          OR (r.kind = 'deep_research' AND m.entity_type = ${executorEntity.deep_research} AND m.entity_id = r.id)
          OR (r.kind = 'web_search' AND m.entity_type = ${executorEntity.web_search} AND m.entity_id = r.id)))
    ORDER BY r.created_at LIMIT 100`)

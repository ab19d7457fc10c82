/**
 * The cap on runs in flight: a project may have at most WA_MAX_CONCURRENT_RUNS standalone runs
 * (WebSearch, DeepResearch) that have not ended; one more create is refused with RunCapReached
 * (429 too_many_concurrent_runs) before anything is written. DoAnything runs are bounded by the
 * sessions cap instead (a session runs one run at a time).
 *
 * Called first in the transaction that inserts the run: a transaction-scoped advisory lock per
 * project serialises the project's creates on every node sharing the database, so the count
 * cannot go stale between the check and the insert (200 parallel creates against a cap of 25
 * give 25), and the refused create leaves nothing behind. In this process the project's creates
 * also wait their turn in memory (`oneAdmissionAtATime`) before they open that transaction: a
 * burst of 200 holds one SQL connection at a time, not the whole pool queued on the lock, so
 * requests of other tenants keep theirs.
 *
 * Each key (or console user) that starts runs has a cap of its own, WA_MAX_CONCURRENT_RUNS_PER_KEY
 * (unset: the project's cap), counted under the same lock from `runs.api_key_id` (migration 0026),
 * so one key cannot take all of its project's share: its 429 says `scope: "key"`.
 */
import { Effect, Schema, Semaphore } from "effect"
import type { SqlClient } from "effect/sql"
import { RunCapReached } from "../domain/errors.ts"
import { terminalStatuses } from "../domain/run-state.ts"
import type { ProjectId } from "../domain/run.ts"
import { decodeRows } from "../domain/rows.ts"

/** The first key of the advisory locks this module takes (the second is the project's hash). */
const RUNS_IN_FLIGHT_LOCK = 0x7761_7231 // "war1"

/** The count of runs in flight (`count(*)::int`), up to the cap. */
const InFlight = Schema.Struct({ active: Schema.Number })
const inFlight = decodeRows(InFlight)

/** The key whose request starts runs (the contract's, src/domain/run-started-by.ts). */
export { RunStartedBy } from "../domain/run-started-by.ts"

/**
 * Fails with RunCapReached when the project has `limit` runs in flight, or the key `key.id` has
 * `key.limit`; must run inside a transaction.
 */
export const admitRunInFlight = (sql: SqlClient.SqlClient, projectId: ProjectId, limit: number, key?: { readonly id: string; readonly limit: number }) =>
  Effect.gen(function*() {
    yield* sql`SELECT pg_advisory_xact_lock(${RUNS_IN_FLIGHT_LOCK}, hashtext(${projectId}))`
    // Standalone runs are the kinds below (runs_project_kind serves the lookup); the inner LIMIT
    // stops the scan once the cap is reached.
    const [row] = yield* inFlight(sql`
      SELECT count(*)::int AS active FROM (
        SELECT 1 FROM runs
        WHERE project_id = ${projectId} AND kind IN ('web_search', 'deep_research')
          AND status NOT IN ${sql.in([...terminalStatuses])}
        LIMIT ${limit}
      ) AS in_flight`)
    const active = row?.active ?? 0
    if (active >= limit) return yield* new RunCapReached({ active, limit, scope: "project" })
    if (key === undefined || key.limit >= limit) return
    // The key's runs are its project's: the project's lock above serialises its creates too.
    const [own] = yield* inFlight(sql`
      SELECT count(*)::int AS active FROM (
        SELECT 1 FROM runs
        WHERE api_key_id = ${key.id} AND project_id = ${projectId} AND kind IN ('web_search', 'deep_research')
          AND status NOT IN ${sql.in([...terminalStatuses])}
        LIMIT ${key.limit}
      ) AS in_flight`)
    const keyActive = own?.active ?? 0
    if (keyActive >= key.limit) return yield* new RunCapReached({ active: keyActive, limit: key.limit, scope: "key" })
  })

const admissionGates = new Map<string, { readonly semaphore: Semaphore.Semaphore; users: number }>()

/** Runs `admission` (a create's transaction) when the project's previous one in this process has ended. */
export const oneAdmissionAtATime = (projectId: ProjectId) => <A, E, R>(admission: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    let gate = admissionGates.get(projectId)
    if (gate === undefined) {
      gate = { semaphore: Semaphore.makeUnsafe(1), users: 0 }
      admissionGates.set(projectId, gate)
    }
    const held = gate
    held.users++
    return Semaphore.withPermit(held.semaphore, admission).pipe(Effect.ensuring(Effect.sync(() => {
      if (--held.users === 0) admissionGates.delete(projectId)
    })))
  })

/**
 * Lock order and lock-conflict retries (src/store/runs.ts, src/store/transactions.ts), in-process
 * on a database of this file with the real RunStore:
 *
 * - adding a run to a session while its previous run ends (POST /sessions/{sid}/runs racing the
 *   run's end) never deadlocks: 50 races, each add either succeeds or is refused as
 *   PreviousRunActive (409), never a defect (500), and PostgreSQL counted no deadlock;
 * - a transaction that loses a deadlock is run again by the client itself: two transactions
 *   that lock two rows in opposite orders both commit.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, References } from "effect"
import { SqlClient } from "effect/sql"
import { Projects } from "../../src/auth/projects.ts"
import { AppConfig } from "../../src/config/config.ts"
import type { SessionId } from "../../src/domain/run.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/runs.ts"
import { SessionStore } from "../../src/store/sessions.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"
import { storeSession } from "./store-sessions.ts"

const ConfigLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabase("lockorder")
  const dataDir = yield* freshDataDir("wa-lock-order")
  return AppConfig.layerFrom({ DATABASE_URL: url, WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Warn" })
}))

const TestLayer = Layer.mergeAll(RunStore.layer, SessionStore.layer, Projects.layer).pipe(
  Layer.provideMerge(databaseLayer("own")),
  Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
  Layer.provideMerge(ConfigLive)
)

/** Deadlocks PostgreSQL detected in this database so far (its statistics flushed first). */
const deadlocks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`SELECT pg_stat_force_next_flush()`.pipe(Effect.ignore)
  yield* sql`SELECT pg_stat_clear_snapshot()`
  const [row] = yield* sql<{ deadlocks: string }>`SELECT deadlocks::text FROM pg_stat_database WHERE datname = current_database()`
  return Number(row!.deadlocks)
})

const newRun = (instructions: string) => ({
  instructions,
  request: { _tag: "DoAnything", instructions, keep_alive: true, agentmail: true, skills: [], allowed_actions: [] } as never,
  maxSteps: 5,
  model: null,
  maxDurationMs: null
})

layer(TestLayer, { excludeTestServices: true, timeout: 120_000 })("lock order", (it) => {
  it.effect("adding a run while the previous run ends: 50 races, no defect, no deadlock", () =>
    Effect.gen(function*() {
      const store = yield* RunStore
      const sessions = yield* SessionStore
      const project = yield* Projects.use((projects) => projects.create("lock-order"))
      const { session, run: first } = yield* storeSession(project.id)
      const before = yield* deadlocks
      let current = first.id
      const outcomes = { added: 0, refused: 0 }
      for (let i = 0; i < 50; i++) {
        yield* store.transition(current, "running")
        // The run's end (with its browser charge and the session's status) against the next add.
        const [ended, added] = yield* Effect.all([
          Effect.exit(store.transition(current, "done", { terminalReason: "done" })),
          Effect.exit(sessions.addRun(session.id as SessionId, newRun(`race ${i}`)))
        ], { concurrency: 2 })
        expect(Exit.isSuccess(ended), String(ended)).toBe(true)
        if (Exit.isSuccess(added)) {
          outcomes.added++
          current = added.value.id
        } else {
          // The only refusal the race may give: the previous run had not ended yet (409).
          expect(Exit.isFailure(added) && added.cause.toString()).toContain("PreviousRunActive")
          outcomes.refused++
          current = (yield* sessions.addRun(session.id as SessionId, newRun(`after ${i}`))).id
        }
      }
      expect(outcomes.added + outcomes.refused).toBe(50)
      expect(yield* deadlocks).toBe(before)
    }))

  it.effect("a transaction that loses a deadlock runs again: both of two opposite-order lockers commit", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE lock_pair (id int PRIMARY KEY, n int NOT NULL)`
      yield* sql`INSERT INTO lock_pair VALUES (1, 0), (2, 0)`
      const before = yield* deadlocks
      // Each holds its first row until the other holds its own: one of them must be the deadlock's victim.
      const firstLocked = yield* Deferred.make<void>()
      const secondLocked = yield* Deferred.make<void>()
      let attempts = 0
      const locker = (first: number, second: number, mine: Deferred.Deferred<void>, theirs: Deferred.Deferred<void>) =>
        sql.withTransaction(Effect.gen(function*() {
          attempts++
          yield* sql`UPDATE lock_pair SET n = n + 1 WHERE id = ${first}`
          yield* Deferred.succeed(mine, undefined)
          yield* Deferred.await(theirs)
          yield* sql`UPDATE lock_pair SET n = n + 1 WHERE id = ${second}`
        })).pipe(Effect.orDie)
      yield* Effect.all([locker(1, 2, firstLocked, secondLocked), locker(2, 1, secondLocked, firstLocked)], { concurrency: 2 })
      const rows = yield* sql<{ n: number }>`SELECT n FROM lock_pair ORDER BY id`
      // Both committed once: each row was updated by each transaction.
      expect(rows.map((row) => row.n)).toEqual([2, 2])
      // At least one deadlock, and each cost exactly one more attempt. (A retry can start before the
      // winner took its second row and deadlock with it once more: rare, seen on a loaded CI host.)
      const retries = attempts - 2
      expect(retries).toBeGreaterThanOrEqual(1)
      expect((yield* deadlocks) - before).toBeGreaterThanOrEqual(retries)
    }))
})

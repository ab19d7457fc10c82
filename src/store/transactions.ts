/**
 * Transactions that lose a lock conflict are run again. PostgreSQL aborts one transaction of a
 * deadlock (SQLSTATE 40P01) and, under SERIALIZABLE or REPEATABLE READ, one of two conflicting
 * writers (40001); both are safe to run again from the start, and the caller should not see them
 * as a 500.
 *
 * `retryLockConflicts` makes the client's own `withTransaction` do that, so every transaction
 * of the service gets it (applied once, where the client is made: src/store/database.ts). Only the
 * outermost transaction is run again: a nested one is a savepoint of a transaction PostgreSQL
 * already aborted, so its failure goes up to the outermost, which starts over.
 *
 * Store code often turns an SqlError into a defect (Effect.orDie) inside the transaction; the
 * conflict is recognised in the failure or in the defect.
 */
import { Cause, Effect, Exit, Option } from "effect"
import type { SqlClient } from "effect/sql"
import { SqlError } from "effect/sql/SqlError"

/** Attempts of one transaction in all (the first included). */
export const TRANSACTION_ATTEMPTS = 6

/** A deadlock or a serialization failure: the transaction can be run again as it is. */
export const isLockConflict = (error: unknown): boolean =>
  error instanceof SqlError && (error.reason._tag === "DeadlockError" || error.reason._tag === "SerializationError")

const conflictOf = <E>(cause: Cause.Cause<E>): boolean => !Cause.hasInterrupts(cause) && isLockConflict(Cause.squash(cause))

/**
 * Makes `client.withTransaction` run an outermost transaction again (up to TRANSACTION_ATTEMPTS
 * in all, after a short random pause that grows) when it failed on a lock conflict. Changes the
 * client in place: the PgClient and the SqlClient of a layer are one object.
 */
export const retryLockConflicts = (client: SqlClient.SqlClient): void => {
  const once = client.withTransaction
  const withTransaction = <R, E, A>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
    Effect.gen(function*() {
      if (Option.isSome(yield* Effect.serviceOption(client.transactionService))) return yield* once(effect)
      for (let attempt = 1;; attempt++) {
        const exit = yield* Effect.exit(once(effect))
        if (Exit.isSuccess(exit)) return exit.value
        if (attempt >= TRANSACTION_ATTEMPTS || !conflictOf(exit.cause)) return yield* Effect.failCause(exit.cause)
        yield* Effect.logDebug("transaction ran into a lock conflict; running it again").pipe(Effect.annotateLogs({ attempt }))
        // Real time, not the Effect clock: a test's TestClock must not hold a retry back.
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, Math.round(Math.random() * 10 * attempt))))
      }
    })
  ;(client as { withTransaction: SqlClient.SqlClient["withTransaction"] }).withTransaction = withTransaction
}

/**
 * Rows read by a store, decoded through their Schema (the persistence convention: no `as` on what
 * the database returns). A row that does not decode is a defect: the store wrote it. Here, at the
 * bottom, because every store uses it (the run store and billing's store among them, which must
 * not import each other both ways).
 */
import { Effect, Schema } from "effect"

/**
 * `decodeRowsKeepingFailure(Row)(sql\`...\`)`: the statement's rows, each decoded as `Row`; the
 * statement's own failure stays a failure, for a reader that answers it (a probe reports a
 * database that does not answer as not ready, not as a defect).
 */
export const decodeRowsKeepingFailure = <S extends Schema.Top>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
  return <E, R>(rows: Effect.Effect<ReadonlyArray<unknown>, E, R>) => Effect.flatMap(rows, (raw) => Effect.orDie(decode(raw)))
}

/** `decodeRows(Row)(sql\`...\`)`: the statement's rows, each decoded as `Row`; a failure of the statement is a defect too. */
export const decodeRows = <S extends Schema.Top>(schema: S) => {
  const keeping = decodeRowsKeepingFailure(schema)
  return <E, R>(rows: Effect.Effect<ReadonlyArray<unknown>, E, R>) => Effect.orDie(keeping(rows))
}

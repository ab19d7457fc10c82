/**
 * Rows read by a store, decoded through their Schema (the persistence convention: no `as` on what
 * the database returns). A row that does not decode is a defect: the store wrote it. Here, at the
 * bottom, because every store uses it (the run store and billing's store among them, which must
 * not import each other both ways).
 */
import { Effect, Schema } from "effect"

/** `decodeRows(Row)(sql\`...\`)`: the statement's rows, each decoded as `Row`. */
export const decodeRows = <S extends Schema.Top>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
  return <E, R>(rows: Effect.Effect<ReadonlyArray<unknown>, E, R>) => Effect.orDie(Effect.flatMap(rows, (raw) => decode(raw)))
}

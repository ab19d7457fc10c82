/**
 * Binary run artifacts (DoAnything recordings): the bytes in `data` (a recording is gzip-compressed
 * JSON, so `content_encoding` is `gzip`); `content` stays the text of text artifacts (DeepResearch)
 * and is empty for binary ones.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE run_artifacts ADD COLUMN data bytea`
  yield* sql`ALTER TABLE run_artifacts ADD COLUMN content_encoding text`
})

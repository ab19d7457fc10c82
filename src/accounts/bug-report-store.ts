/**
 * Bug reports in PostgreSQL. Rows are decoded through Schema; what a report may hold is the
 * service's rule (src/accounts/bug-reports.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { BugReportStatuses } from "../domain/bug-report.ts"
import { makeId } from "../domain/ids.ts"
import { createOnce } from "../store/keyed-create.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { type ApiKeyId, ProjectId } from "../domain/run.ts"
import { decodeRows } from "../domain/rows.ts"
import { BugReportId, UserId } from "../domain/id-schemas.ts"


export const InputMethod = Schema.Literals(["text", "voice", "mixed"])
export type InputMethod = typeof InputMethod.Type

export const BugReportRow = Schema.Struct({
  id: BugReportId,
  project_id: ProjectId,
  user_id: Schema.NullOr(UserId),
  message: Schema.String,
  page_path: Schema.String,
  screenshot_data_url: Schema.NullOr(Schema.String),
  input_method: InputMethod,
  viewport_width: Schema.NullOr(Schema.Number),
  viewport_height: Schema.NullOr(Schema.Number),
  user_agent: Schema.NullOr(Schema.String),
  status: Schema.Literals(BugReportStatuses),
  created_at: Schema.Date
})
export type BugReportRow = typeof BugReportRow.Type
const reportRows = decodeRows(BugReportRow)

/** What is stored of a new report, and who filed it (a console user, or an API key). */
export interface StoredBugReport {
  readonly projectId: ProjectId
  readonly userId: UserId | null
  readonly apiKeyId: ApiKeyId | null
  readonly message: string
  readonly page_path: string
  readonly input_method: InputMethod
  readonly screenshot_data_url: string | null
  readonly user_agent: string | null
  readonly viewport_width: number | null
  readonly viewport_height: number | null
}

export class BugReportStore extends Context.Service<BugReportStore, {
  /**
   * Inserts the report; under an Idempotency-Key it is recorded on the claim in its insert's
   * transaction, so a retry after a crash gets it instead of filing a second (src/store/keyed-create.ts).
   */
  readonly insertOnce: (report: StoredBugReport) => Effect.Effect<BugReportRow>
  /** A page newest first (`onlyUserId`: that user's reports only), and the total it is a page of. */
  readonly page: (projectId: ProjectId, onlyUserId: UserId | null, limit: number, beforeId: string | undefined) => Effect.Effect<{
    readonly rows: ReadonlyArray<BugReportRow>
    readonly total: number
  }>
}>()("wa/accounts/BugReportStore") {
  static readonly layer = Layer.effect(
    BugReportStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const columns = sql.literal(
        "id, project_id, user_id, message, page_path, screenshot_data_url, input_method, viewport_width, viewport_height, user_agent, status, created_at"
      )
      return BugReportStore.of(withMethodSpans("BugReportStore", {
        insertOnce: (report) =>
          createOnce(
            sql,
            reportRows(sql`
              INSERT INTO bug_reports (id, project_id, user_id, api_key_id, message, page_path, screenshot_data_url, input_method,
                viewport_width, viewport_height, user_agent)
              VALUES (${makeId("bug")}, ${report.projectId}, ${report.userId}, ${report.apiKeyId}, ${report.message}, ${report.page_path},
                ${report.screenshot_data_url}, ${report.input_method}, ${report.viewport_width}, ${report.viewport_height}, ${report.user_agent})
              RETURNING ${columns}`).pipe(Effect.map((rows) => rows[0]!)),
            (row) => row.id,
            (id) => reportRows(sql`SELECT ${columns} FROM bug_reports WHERE id = ${id} AND project_id = ${report.projectId}`).pipe(Effect.map((rows) => rows[0]))
          ),
        page: (projectId, onlyUserId, limit, beforeId) =>
          Effect.gen(function*() {
            const mine = onlyUserId === null ? sql`` : sql`AND user_id = ${onlyUserId}`
            const rows = yield* reportRows(sql`
              SELECT ${columns} FROM bug_reports
              WHERE project_id = ${projectId} ${mine} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
              ORDER BY id DESC LIMIT ${limit}`)
            const [{ total }] = yield* decodeRows(Schema.Struct({ total: Schema.Number }))(sql`
              SELECT count(*)::int AS total FROM bug_reports WHERE project_id = ${projectId} ${mine}`)
            return { rows, total }
          })
      }))
    })
  )
}

/**
 * Bug reports of a project, filed from the console (by a signed-in user) or by any client with a
 * key of the project. A screenshot is an image data URL (`data:image/png|jpeg|webp;base64,...`)
 * of at most WA_BUG_REPORT_SCREENSHOT_MAX_BYTES characters. Status starts `open` (the spec names
 * no other values; `open` and `closed` are what this service uses).
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import { makeId } from "../domain/ids.ts"
import { createOnce } from "../store/keyed-create.ts"
import { AccountInvalidField } from "./errors.ts"

export type InputMethod = "text" | "voice" | "mixed"

export interface BugReportRow {
  readonly id: string
  readonly project_id: string
  readonly user_id: string | null
  readonly message: string
  readonly page_path: string
  readonly screenshot_data_url: string | null
  readonly input_method: InputMethod
  readonly viewport_width: number | null
  readonly viewport_height: number | null
  readonly user_agent: string | null
  readonly status: string
  readonly created_at: Date
}

export interface NewBugReport {
  readonly message: string
  readonly page_path: string
  readonly input_method: InputMethod
  readonly screenshot_data_url: string | null
  readonly user_agent: string | null
  readonly viewport_width: number | null
  readonly viewport_height: number | null
}

/** Who files or reads: a console user (their id) or an API key (its id). */
export interface Reporter {
  readonly userId: string | null
  readonly apiKeyId: string | null
}

const dataUrlPattern = /^data:image\/(png|jpeg|webp);base64,[A-Za-z0-9+/]+={0,2}$/

export class BugReports extends Context.Service<BugReports, {
  readonly create: (projectId: string, reporter: Reporter, report: NewBugReport) => Effect.Effect<BugReportRow, AccountInvalidField>
  /** Newest first; `onlyUserId` limits the list to one user's reports (a tenant member's view). */
  readonly list: (projectId: string, onlyUserId: string | null, limit: number, beforeId: string | undefined) => Effect.Effect<{
    readonly rows: ReadonlyArray<BugReportRow>
    readonly total: number
  }>
}>()("wa/accounts/BugReports") {
  static readonly layer = Layer.effect(
    BugReports,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const columns = sql.literal(
        "id, project_id, user_id, message, page_path, screenshot_data_url, input_method, viewport_width, viewport_height, user_agent, status, created_at"
      )

      const create = Effect.fn("BugReports.create")(function*(projectId: string, reporter: Reporter, report: NewBugReport) {
        const screenshot = report.screenshot_data_url
        if (screenshot !== null) {
          if (screenshot.length > config.bugReportScreenshotMaxBytes) {
            return yield* new AccountInvalidField({
              field: "screenshot_data_url",
              detail: `screenshot_data_url is ${screenshot.length} characters; at most ${config.bugReportScreenshotMaxBytes} are accepted`
            })
          }
          if (!dataUrlPattern.test(screenshot)) {
            return yield* new AccountInvalidField({
              field: "screenshot_data_url",
              detail: "screenshot_data_url must be a base64 data URL of a PNG, JPEG or WebP image (data:image/png;base64,...)"
            })
          }
        }
        const insert = sql<BugReportRow>`
          INSERT INTO bug_reports (id, project_id, user_id, api_key_id, message, page_path, screenshot_data_url, input_method,
            viewport_width, viewport_height, user_agent)
          VALUES (${makeId("bug")}, ${projectId}, ${reporter.userId}, ${reporter.apiKeyId}, ${report.message}, ${report.page_path},
            ${screenshot}, ${report.input_method}, ${report.viewport_width}, ${report.viewport_height}, ${report.user_agent})
          RETURNING ${columns}`.pipe(Effect.orDie, Effect.map((rows) => rows[0]!))
        // Under an Idempotency-Key the report is recorded on the claim in its insert's transaction, so
        // a retry after a crash gets it instead of filing a second (src/store/keyed-create.ts).
        return yield* createOnce(sql, insert, (row) => row.id, (id) =>
          sql<BugReportRow>`SELECT ${columns} FROM bug_reports WHERE id = ${id} AND project_id = ${projectId}`.pipe(
            Effect.orDie,
            Effect.map((rows) => rows[0])
          ))
      })

      const list = (projectId: string, onlyUserId: string | null, limit: number, beforeId: string | undefined) =>
        Effect.gen(function*() {
          const mine = onlyUserId === null ? sql`` : sql`AND user_id = ${onlyUserId}`
          const rows = yield* sql<BugReportRow>`
            SELECT ${columns} FROM bug_reports
            WHERE project_id = ${projectId} ${mine} ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`
          const [{ total }] = yield* sql<{ total: number }>`
            SELECT count(*)::int AS total FROM bug_reports WHERE project_id = ${projectId} ${mine}`
          return { rows, total }
        }).pipe(Effect.orDie)

      return BugReports.of({ create, list })
    })
  )
}

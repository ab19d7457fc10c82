/**
 * A session's email inbox (agentmail): the messages received at its `inbox_address`
 * (`/v1/projects/{pid}/do_anything/sessions/{sid}/inbox`), newest first. Not the console inbox of
 * monitors' notifications (inbox.ts).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, NotFound } from "../../domain/api-errors.ts"
import { PageQuery } from "../../domain/pagination.ts"
import { MaxString, ProjectIdParam, SessionIdParam, Timestamp } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

export const InboxMessageSummary = Schema.Struct({
  id: Schema.String.annotate({ description: "eml_..." }),
  session_id: Schema.String,
  run_id: Schema.NullOr(Schema.String).annotate({ description: "the session's run in progress when it arrived (it got run.email_received)" }),
  from: Schema.String,
  to: Schema.String,
  subject: Schema.String,
  size_bytes: Schema.Int,
  attachment_count: Schema.Int,
  received_at: Timestamp
})

export const InboxMessageAttachment = Schema.Struct({
  filename: Schema.String,
  content_type: Schema.String,
  size_bytes: Schema.Int,
  saved_as: Schema.NullOr(Schema.String).annotate({ description: "the file of the session's workspace it was saved as; null when not saved" }),
  note: Schema.NullOr(Schema.String).annotate({ description: "why it was not saved (no workspace, too large)" })
})

export const InboxMessageResponse = Schema.Struct({
  ...InboxMessageSummary.fields,
  message_id: Schema.NullOr(Schema.String).annotate({ description: "the Message-ID header" }),
  text: Schema.String.annotate({ description: "the body as text (the text part, else the HTML part converted)" }),
  html: Schema.NullOr(Schema.String),
  links: Schema.Array(Schema.String).annotate({ description: "http(s) links of the body, in order" }),
  codes: Schema.Array(Schema.String).annotate({ description: "one-time codes found near words such as code or verification, likeliest first" }),
  attachments: Schema.Array(InboxMessageAttachment)
})

export const InboxMessageListResponse = Schema.Struct({
  items: Schema.Array(InboxMessageSummary),
  next_cursor: Schema.NullOr(Schema.String)
})

const sessionParams = { ...ProjectIdParam, sid: SessionIdParam }

export class InboxMessagesApi extends HttpApiGroup.make("session_inbox")
  .add(
    HttpApiEndpoint.get("list", "/sessions/:sid/inbox", {
      params: sessionParams,
      query: PageQuery,
      success: InboxMessageListResponse,
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.get("get", "/sessions/:sid/inbox/:message_id", {
      params: { ...sessionParams, message_id: MaxString(64) },
      success: InboxMessageResponse,
      error: NotFound
    })
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/do_anything")
  .annotateMerge(OpenApi.annotations({
    title: "Session inbox",
    description: "Email received at a DoAnything session's inbox_address (agentmail), newest first."
  }))
{}

/**
 * A session's email inbox on the wire: a message (summary and whole), its attachments, and the
 * list (src/http/api/inbox-messages.ts).
 */
import { Schema } from "effect"
import { Timestamp } from "../schemas.ts"

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

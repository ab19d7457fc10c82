/**
 * Track on the wire: the monitor view (and the one a create answers, with its secret), the list
 * of monitors and its query, tick runs and snapshots with their pages (src/http/api/track.ts).
 * The request bodies are in src/domain/monitor.ts.
 */
import { Schema } from "effect"
import { MonitorDiff, MonitorStatus, NotifyChannelKind, PageResult, TickStatus, TickTrigger } from "../monitor.ts"
import { CanonicalSchedule } from "../schedule-spec.ts"
import { Timestamp } from "../schemas.ts"
import { secretField } from "./common.ts"

const Json = Schema.Unknown
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)
const Money = Schema.String.annotate({ description: "USD as a decimal string exact to the micro-dollar, at least two decimals (\"0.000182\", \"1.50\")" })

export const MonitorResponse = Schema.Struct({
  id: Schema.String,
  tenant_id: Schema.String.annotate({ description: "the project id until tenants exist" }),
  owner_user_id: Schema.NullOr(Schema.String).annotate({ description: "null until console accounts exist" }),
  status: MonitorStatus,
  status_reason: Schema.NullOr(Schema.String),
  intent_text: Schema.String,
  notify_channel: Schema.Struct({
    kind: NotifyChannelKind,
    url: Schema.NullOr(Schema.String),
    webhook_id: Schema.NullOr(Schema.String),
    schedule_id: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({ description: "kind schedule: the DoAnything schedule each notification triggers" })
  }),
  schedule: Schema.NullOr(CanonicalSchedule),
  target_urls: Schema.NullOr(Schema.Array(Schema.String)),
  extraction_schema: Schema.NullOr(JsonObject),
  trigger_dsl: JsonObject.annotate({ description: "the trigger rule in effect: the one given, or the default {\"on\": \"change\"} when none was (never null)", examples: [{ on: "change" }] }),
  stop_condition_dsl: Schema.NullOr(JsonObject).annotate({ description: "null: the monitor runs until stopped" }),
  profile_id: Schema.NullOr(Schema.String),
  baseline_extracted: Json,
  baseline_extracted_at: Schema.NullOr(Timestamp),
  last_tick_at: Schema.NullOr(Timestamp),
  last_tick_n: Schema.Int,
  consecutive_failures: Schema.Int,
  pending_input_request: Schema.NullOr(Schema.Struct({ request_id: Schema.String, question: Schema.String })).annotate({
    description: "the supervisor's open question during alignment (answer it with intervene)"
  }),
  created_at: Timestamp,
  updated_at: Timestamp
})

export const CreateMonitorResponse = Schema.Struct({
  ...MonitorResponse.fields,
  notify_secret: secretField(Schema.String, "Standard Webhooks secret (whsec_...) signing callback_url deliveries; returned only here")
})

export const MonitorListResponse = Schema.Struct({
  items: Schema.Array(MonitorResponse),
  total: Schema.Int,
  page: Schema.Int,
  page_size: Schema.Int,
  has_more: Schema.Boolean
})

export const TickRunResponse = Schema.Struct({
  id: Schema.String,
  monitor_id: Schema.String,
  n: Schema.NullOr(Schema.Int),
  trigger: TickTrigger,
  slot_at: Schema.NullOr(Timestamp),
  status: TickStatus,
  changed: Schema.NullOr(Schema.Boolean),
  fired: Schema.NullOr(Schema.Boolean),
  snapshot_id: Schema.NullOr(Schema.String),
  pages: Schema.Array(PageResult),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, detail: Schema.String })),
  llm_cost_usd: Money,
  browser_cost_usd: Money,
  proxy_cost_usd: Money,
  service_cost_usd: Money.annotate({ description: "The tick fee (track_per_tick of the price table), charged when the tick succeeds" }),
  total_cost_usd: Money,
  created_at: Timestamp,
  started_at: Schema.NullOr(Timestamp),
  finished_at: Schema.NullOr(Timestamp)
})

export const SnapshotResponse = Schema.Struct({
  id: Schema.String,
  monitor_id: Schema.String,
  run_id: Schema.String,
  n: Schema.Int,
  content_hash: Schema.String,
  changed: Schema.Boolean,
  extracted: Json,
  diff: Schema.NullOr(MonitorDiff).annotate({ description: "null for the baseline; {kind: json, changes: [{op, path, old, new}]} or {kind: text, added, removed, unified}" }),
  pages: Schema.Array(PageResult),
  text_length: Schema.Int,
  text: Schema.optional(Schema.String),
  fetched_at: Timestamp,
  created_at: Timestamp
})

/** The query of the monitor list (pages by number, as the spec writes it). */
export const ListMonitorsQuery = {
  page: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100_000 }))).annotate({ default: 1 }),
  page_size: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))).annotate({ default: 20 }),
  status: Schema.optional(MonitorStatus)
}

export const TickRunListResponse = Schema.Struct({ items: Schema.Array(TickRunResponse), next_cursor: Schema.NullOr(Schema.String) })
export const SnapshotListResponse = Schema.Struct({ items: Schema.Array(SnapshotResponse), next_cursor: Schema.NullOr(Schema.String) })

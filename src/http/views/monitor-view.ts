/**
 * Monitors, tick runs and snapshots on the wire. Until console accounts and tenants exist
 * (issue 14), `tenant_id` is the project id and `owner_user_id` is null.
 */
import type { Monitor, Snapshot, TickRun } from "../../domain/monitor.ts"
import { usdFromMicros } from "../../domain/money.ts"
import { DEFAULT_TRIGGER } from "../../domain/track-rules.ts"
import { iso } from "./timestamps.ts"

export const monitorView = (monitor: Monitor) => ({
  id: monitor.id,
  tenant_id: monitor.project_id,
  owner_user_id: null,
  status: monitor.status,
  status_reason: monitor.status_reason,
  intent_text: monitor.intent_text,
  notify_channel: monitor.notify_channel,
  schedule: monitor.schedule,
  target_urls: monitor.target_urls,
  extraction_schema: monitor.extraction_schema,
  // The rule in effect: none given means the default, shown as it is ({"on": "change"}).
  trigger_dsl: monitor.trigger_dsl ?? DEFAULT_TRIGGER,
  stop_condition_dsl: monitor.stop_condition_dsl,
  profile_id: monitor.profile_id,
  baseline_extracted: monitor.baseline_extracted ?? null,
  baseline_extracted_at: iso(monitor.baseline_extracted_at),
  last_tick_at: iso(monitor.last_tick_at),
  last_tick_n: monitor.last_tick_n,
  consecutive_failures: monitor.consecutive_failures,
  pending_input_request: monitor.pending_question,
  created_at: monitor.created_at.toISOString(),
  updated_at: monitor.updated_at.toISOString()
})

export const createdMonitorView = (monitor: Monitor) => ({ ...monitorView(monitor), notify_secret: monitor.notify_secret })

export const tickRunView = (tick: TickRun) => ({
  id: tick.id,
  monitor_id: tick.monitor_id,
  n: tick.n,
  trigger: tick.trigger,
  slot_at: iso(tick.slot_at),
  status: tick.status,
  changed: tick.changed,
  fired: tick.fired,
  snapshot_id: tick.snapshot_id,
  pages: tick.pages,
  error: tick.error_code === null ? null : { code: tick.error_code, detail: tick.error_detail ?? "" },
  // The tick's cost fields add up: model tokens + the tick fee (service) = total.
  llm_cost_usd: usdFromMicros(tick.llm_cost_micros),
  browser_cost_usd: "0.00",
  proxy_cost_usd: "0.00",
  service_cost_usd: usdFromMicros(tick.service_cost_micros),
  total_cost_usd: usdFromMicros(tick.llm_cost_micros + tick.service_cost_micros),
  created_at: tick.created_at.toISOString(),
  started_at: iso(tick.started_at),
  finished_at: iso(tick.finished_at)
})

/** A snapshot; lists leave out its text (`text_length` says how long it is). */
export const snapshotView = (snapshot: Snapshot, withText: boolean) => ({
  id: snapshot.id,
  monitor_id: snapshot.monitor_id,
  run_id: snapshot.run_id,
  n: snapshot.n,
  content_hash: snapshot.content_hash,
  changed: snapshot.changed,
  extracted: snapshot.extracted ?? null,
  diff: snapshot.diff ?? null,
  pages: snapshot.pages,
  text_length: snapshot.text.length,
  ...(withText ? { text: snapshot.text } : {}),
  fetched_at: snapshot.fetched_at.toISOString(),
  created_at: snapshot.created_at.toISOString()
})

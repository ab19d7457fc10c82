/**
 * Track: the project's monitors, and a monitor with its ticks, snapshots (with their diffs),
 * deliveries (failed ones can be retried) and live events; alignment questions are answered here.
 */
import { type FormEvent, useEffect, useState } from "react"
import { type Api, describeError } from "../api.ts"
import type { EventPayload, StreamEventOf } from "../events.ts"
import { Link, navigate } from "../router.tsx"
import { ErrorBox, EventLog, Json, Section, Status, Time, useEventStream, useLoad } from "../ui.tsx"
import type {
  CreateMonitorBody, Delivery, DeliveryList, Monitor, MonitorCreated, MonitorInterveneBody, MonitorList, PatchMonitorBody, SnapshotList,
  TickRun, TickRunList
} from "../wire.ts"

/**
 * A snapshot's diff. The document declares `diff` of a snapshot as any JSON (its shape is only in
 * the field's description), so the page checks it before reading it; the shape it checks for is
 * the one the document declares for the same diff in `monitor.change_detected`.
 */
type MonitorDiff = NonNullable<EventPayload<"monitor.change_detected">["diff"]>
type JsonChange = Extract<MonitorDiff, { kind: "json" }>["changes"][number]

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)
const changeOps: ReadonlyArray<JsonChange["op"]> = ["added", "removed", "changed"]
const isJsonChange = (value: unknown): value is JsonChange =>
  isRecord(value) && typeof value["path"] === "string" && changeOps.some((op) => op === value["op"])

/** The diff the page can show: null for the baseline, undefined for a shape it does not know (shown as JSON). */
const readDiff = (diff: unknown): MonitorDiff | null | undefined => {
  if (diff === null || diff === undefined) return null
  if (!isRecord(diff)) return undefined
  if (diff["kind"] === "json" && Array.isArray(diff["changes"]) && diff["changes"].every(isJsonChange)) return { kind: "json", changes: diff["changes"] }
  if (diff["kind"] === "text" && typeof diff["added"] === "number" && typeof diff["removed"] === "number" && typeof diff["unified"] === "string") {
    return { kind: "text", added: diff["added"], removed: diff["removed"], unified: diff["unified"] }
  }
  return undefined
}

const schedule = (m: Monitor) =>
  m.schedule === null ? "(set during alignment)" : m.schedule.kind === "interval" ? `every ${m.schedule.interval_seconds} s` : `cron ${m.schedule.expr} ${m.schedule.tz}`

const NewMonitor = ({ api }: { api: Api }) => {
  const [intent, setIntent] = useState("")
  const [urls, setUrls] = useState("")
  const [interval, setIntervalSeconds] = useState("3600")
  const [direct, setDirect] = useState(true)
  const [error, setError] = useState<string>()
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    const target_urls = urls.split("\n").map((u) => u.trim()).filter((u) => u !== "")
    try {
      const created = await api.post<MonitorCreated>(api.project("/track/monitors"), {
        intent,
        notify_channel: { kind: "console_inbox" },
        ...(target_urls.length > 0 ? { target_urls } : {}),
        ...(direct ? { schedule: { kind: "interval", interval_seconds: Number(interval) } } : {})
      } satisfies CreateMonitorBody)
      navigate(`/monitors/${created.id}`)
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <form className="stack" onSubmit={submit} aria-label="new monitor">
      <label>What to watch<textarea rows={2} minLength={4} maxLength={4000} required value={intent} onChange={(e) => setIntent(e.target.value)} placeholder="Tell me when the price of … drops below …" /></label>
      <label>Pages (one URL per line; none: a web search of the intent)<textarea rows={2} value={urls} onChange={(e) => setUrls(e.target.value)} /></label>
      <div className="row">
        <label className="inline"><input type="checkbox" checked={direct} onChange={(e) => setDirect(e.target.checked)} /> schedule now (else the supervisor asks you first)</label>
        {direct ? <label>every <input type="number" min={1} value={interval} onChange={(e) => setIntervalSeconds(e.target.value)} className="narrow" /> s</label> : null}
      </div>
      <p className="muted small">Notifications go to the console inbox; callback URLs and project webhooks can be set through the API.</p>
      <ErrorBox error={error} />
      <div><button type="submit">Create monitor</button></div>
    </form>
  )
}

export const MonitorsPage = ({ api }: { api: Api }) => {
  const [page, setPage] = useState(1)
  const monitors = useLoad(() => api.get<MonitorList>(api.project(`/track/monitors?page=${page}&page_size=25`)), [api, page])
  return (
    <>
      <Section title="New monitor"><NewMonitor api={api} /></Section>
      <Section title={`Monitors${monitors.data ? ` (${monitors.data.total})` : ""}`} actions={<button className="secondary" onClick={monitors.reload}>Refresh</button>}>
        <ErrorBox error={monitors.error} />
        <table className="list">
          <thead><tr><th>Intent</th><th>Status</th><th>Schedule</th><th>Ticks</th><th>Last tick</th></tr></thead>
          <tbody>
            {monitors.data?.items.map((m) => (
              <tr key={m.id}>
                <td className="clip"><Link to={`/monitors/${m.id}`}>{m.intent_text}</Link></td>
                <td><Status value={m.status} /></td>
                <td>{schedule(m)}</td>
                <td>{m.last_tick_n}{m.consecutive_failures > 0 ? <span className="badge red">{m.consecutive_failures} failing</span> : null}</td>
                <td><Time value={m.last_tick_at} /></td>
              </tr>
            ))}
          </tbody>
        </table>
        {monitors.data?.items.length === 0 ? <p className="muted">No monitors yet.</p> : null}
        <div className="pager">
          {page > 1 ? <button className="secondary" onClick={() => setPage(page - 1)}>Previous</button> : null}
          {monitors.data?.has_more ? <button className="secondary" onClick={() => setPage(page + 1)}>Next</button> : null}
        </div>
      </Section>
    </>
  )
}

const Diff = ({ value }: { value: unknown }) => {
  const diff = readDiff(value)
  if (diff === null) return <span className="muted">baseline</span>
  if (diff === undefined) return <Json value={value} />
  if (diff.kind === "json") {
    return (
      <ul className="diff">
        {diff.changes.map((c, i) => (
          <li key={i}><code>{c.op}</code> <code>{c.path}</code>{"old" in c ? <> <del>{JSON.stringify(c.old)}</del></> : null}{"new" in c ? <> <ins>{JSON.stringify(c.new)}</ins></> : null}</li>
        ))}
      </ul>
    )
  }
  return (
    <div>
      <span className="small"><ins>+{diff.added}</ins> <del>−{diff.removed}</del></span>
      {diff.unified ? (
        <pre className="diff-text">{diff.unified.split("\n").map((line, i) => (
          <span key={i} className={line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : ""}>{line}{"\n"}</span>
        ))}</pre>
      ) : null}
    </div>
  )
}

export const MonitorPage = ({ api, mid }: { api: Api; mid: string }) => {
  const path = api.project(`/track/monitors/${mid}`)
  const monitor = useLoad(() => api.get<Monitor>(path), [api, path])
  const ticks = useLoad(() => api.get<TickRunList>(`${path}/runs?limit=20`), [api, path])
  const snapshots = useLoad(() => api.get<SnapshotList>(`${path}/snapshots?limit=20`), [api, path])
  const deliveries = useLoad(() => api.get<DeliveryList>(`${path}/deliveries?limit=20`), [api, path])
  const stream = useEventStream<StreamEventOf<"track">>(`${path}/events`, api.authorization())
  const [error, setError] = useState<string>()
  const [answer, setAnswer] = useState("")
  const reloadAll = () => {
    monitor.reload()
    ticks.reload()
    snapshots.reload()
    deliveries.reload()
  }
  const count = stream.events.length
  useEffect(() => {
    if (count > 0) reloadAll()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [count])
  const act = async (what: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await what()
      reloadAll()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  const m = monitor.data
  return (
    <>
      <p className="crumbs"><Link to="/monitors">Monitors</Link> / <code>{mid}</code></p>
      <ErrorBox error={monitor.error} />
      {m === undefined ? null : (
        <Section title={m.intent_text} actions={
          <div className="row">
            <button className="secondary" onClick={() => act(() => api.post<TickRun>(`${path}/run_now`))}>Run now</button>
            {m.status === "active" ? <button className="secondary" onClick={() => act(() => api.patch<Monitor>(path, { action: "pause" } satisfies PatchMonitorBody))}>Pause</button> : null}
            {m.status === "paused" ? <button className="secondary" onClick={() => act(() => api.patch<Monitor>(path, { action: "resume" } satisfies PatchMonitorBody))}>Resume</button> : null}
            {m.status !== "canceled" ? <button className="danger" onClick={() => act(() => api.patch<Monitor>(path, { action: "cancel" } satisfies PatchMonitorBody))}>Cancel</button> : null}
          </div>
        }>
          <dl className="facts">
            <dt>Status</dt><dd><Status value={m.status} />{m.status_reason ? <span className="muted"> {m.status_reason}</span> : null}</dd>
            <dt>Schedule</dt><dd>{schedule(m)}</dd>
            <dt>Pages</dt><dd>{m.target_urls?.length ? m.target_urls.map((u) => <div key={u}><a href={u} target="_blank" rel="noopener noreferrer nofollow">{u}</a></div>) : "web search of the intent"}</dd>
            <dt>Notifies</dt><dd>{m.notify_channel.kind}{m.notify_channel.url ? ` ${m.notify_channel.url}` : ""}{m.notify_channel.webhook_id ? ` ${m.notify_channel.webhook_id}` : ""}</dd>
            <dt>Ticks</dt><dd>{m.last_tick_n} · last <Time value={m.last_tick_at} />{m.consecutive_failures > 0 ? ` · ${m.consecutive_failures} failures in a row` : ""}</dd>
          </dl>
          {m.pending_input_request ? (
            <form className="ask" onSubmit={(e) => {
              e.preventDefault()
              void act(async () => {
                await api.post<Monitor>(`${path}/intervene`, { request_id: m.pending_input_request!.request_id, kind: "answer", response: answer } satisfies MonitorInterveneBody)
                setAnswer("")
              })
            }}>
              <div className="ask-prompt"><strong>The supervisor asks:</strong> {m.pending_input_request.question}</div>
              <div className="row"><input value={answer} onChange={(e) => setAnswer(e.target.value)} maxLength={4000} required /><button type="submit">Answer</button></div>
            </form>
          ) : null}
          <ErrorBox error={error} />
        </Section>
      )}
      <Section title="Snapshots">
        <ErrorBox error={snapshots.error} />
        <table className="list">
          <thead><tr><th>#</th><th>Changed</th><th>Diff</th><th>Extracted</th><th>Taken</th></tr></thead>
          <tbody>
            {snapshots.data?.items.map((s) => (
              <tr key={s.id}>
                <td>{s.n}</td>
                <td>{s.changed ? <span className="badge amber">changed</span> : <span className="muted">same</span>}</td>
                <td><Diff value={s.diff} /></td>
                <td>{s.extracted == null ? <span className="muted">{s.text_length} chars of text</span> : <details><summary>data</summary><Json value={s.extracted} /></details>}</td>
                <td><Time value={s.created_at} /></td>
              </tr>
            ))}
          </tbody>
        </table>
        {snapshots.data?.items.length === 0 ? <p className="muted">No snapshot yet.</p> : null}
      </Section>
      <Section title="Ticks">
        <table className="list">
          <thead><tr><th>#</th><th>Status</th><th>Changed</th><th>Notified</th><th>Error</th><th>Finished</th></tr></thead>
          <tbody>
            {ticks.data?.items.map((t) => (
              <tr key={t.id}><td>{t.n ?? ""}</td><td><Status value={t.status} /></td><td>{t.changed == null ? "" : t.changed ? "yes" : "no"}</td><td>{t.fired ? "yes" : ""}</td><td className="clip">{t.error ? `${t.error.code}: ${t.error.detail}` : ""}</td><td><Time value={t.finished_at} /></td></tr>
            ))}
          </tbody>
        </table>
      </Section>
      <Section title="Deliveries">
        <table className="list">
          <thead><tr><th>Event</th><th>Channel</th><th>Status</th><th>Attempts</th><th>Last answer</th><th>Created</th><th /></tr></thead>
          <tbody>
            {deliveries.data?.items.map((d) => (
              <tr key={d.id}>
                <td>{d.event_type}</td><td>{d.channel}</td><td><Status value={d.status} /></td><td>{d.attempts}</td>
                <td className="clip">{d.last_status_code ?? ""} {d.last_error ?? ""}</td><td><Time value={d.created_at} /></td>
                <td>{d.status === "failed" ? <button className="secondary" onClick={() => act(() => api.post<Delivery>(`${path}/deliveries/${d.id}/retry`))}>Retry</button> : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {deliveries.data?.items.length === 0 ? <p className="muted">Nothing delivered yet.</p> : null}
      </Section>
      <Section title="Events"><EventLog events={stream.events} state={stream.state} detail={stream.detail} /></Section>
    </>
  )
}

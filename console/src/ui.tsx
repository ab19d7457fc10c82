/** Pieces every page uses: loading with errors, status badges, times, JSON and the event log. */
import { type DependencyList, type ReactNode, useCallback, useEffect, useRef, useState } from "react"
import { describeError } from "./api.ts"
import { followEvents, type StreamEvent, type StreamState } from "./events.ts"

export interface Loaded<A> {
  readonly data: A | undefined
  readonly error: string | undefined
  readonly loading: boolean
  readonly reload: () => void
}

/** Runs `load` when `deps` change (and on reload), keeping the last data while it reloads. */
export const useLoad = <A,>(load: () => Promise<A>, deps: DependencyList): Loaded<A> => {
  const [state, setState] = useState<{ data: A | undefined; error: string | undefined; loading: boolean }>({ data: undefined, error: undefined, loading: true })
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let live = true
    setState((s) => ({ ...s, loading: true }))
    load().then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error) => live && setState((s) => ({ data: s.data, error: describeError(error), loading: false }))
    )
    return () => {
      live = false
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick])
  const reload = useCallback(() => setTick((t) => t + 1), [])
  return { ...state, reload }
}

/** Re-runs `effect` every `ms` while `active`. */
export const useInterval = (effect: () => void, ms: number, active: boolean) => {
  const saved = useRef(effect)
  saved.current = effect
  useEffect(() => {
    if (!active) return
    const timer = setInterval(() => saved.current(), ms)
    return () => clearInterval(timer)
  }, [ms, active])
}

export const ErrorBox = ({ error }: { error: string | undefined }) =>
  error === undefined ? null : <div className="error" role="alert">{error}</div>

const statusClass: Record<string, string> = {
  pending: "grey", running: "blue", awaiting_input: "amber", paused: "amber", alignment: "amber",
  done: "green", succeeded: "green", delivered: "green", active: "green",
  failed: "red", canceled: "grey", cancelled: "grey", expired: "grey", retrying: "amber", closed: "grey"
}

export const Status = ({ value }: { value: string | null | undefined }) =>
  value == null ? null : <span className={`badge ${statusClass[value] ?? "grey"}`} data-status={value}>{value.replace(/_/g, " ")}</span>

export const Time = ({ value }: { value: string | null | undefined }) =>
  value == null ? <span className="muted">–</span> : <time dateTime={value} title={value}>{new Date(value).toLocaleString()}</time>

export const Json = ({ value }: { value: unknown }) => <pre className="json">{JSON.stringify(value, null, 2)}</pre>

export const Section = ({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) => (
  <section className="card">
    <header className="card-head"><h2>{title}</h2>{actions}</header>
    {children}
  </section>
)

export const terminalStatuses = new Set(["done", "succeeded", "failed", "canceled"])

const keptEvents = 2000
const shownEvents = 500

/** Follows an event stream while mounted; events accumulate in arrival order. */
export const useEventStream = <E extends StreamEvent = StreamEvent>(url: string | undefined, headers: Record<string, string>) => {
  const [events, setEvents] = useState<Array<E>>([])
  const [state, setState] = useState<{ state: StreamState; detail?: string | undefined }>({ state: "connecting" })
  const key = headers["authorization"]
  useEffect(() => {
    if (url === undefined) return
    setEvents([])
    const controller = new AbortController()
    void followEvents<E>({
      url,
      headers,
      signal: controller.signal,
      // A run can last a month: keep the newest events only (the API replays older ones on demand).
      onEvents: (fresh) => setEvents((old) => [...old, ...fresh].slice(-keptEvents)),
      onState: (next, detail) => setState({ state: next, detail })
    })
    return () => controller.abort()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [url, key])
  return { events, ...state }
}

/** One line that says what an event means, for the kinds of events the service emits. */
export const describeEvent = (event: StreamEvent): string => {
  switch (event.type) {
    case "run.status_changed":
      return `status ${event.data.from ?? ""}${event.data.from ? " → " : ""}${event.data.status}`
    case "monitor.status_changed":
      return `status ${event.data.from} → ${event.data.to}${event.data.reason ? ` (${event.data.reason})` : ""}`
    case "run.phase_changed":
      return `phase: ${event.data.phase}`
    case "run.action.started":
      return `${event.data.action} ${compact(event.data.params)}`
    case "run.action.completed":
      return `${event.data.action} done ${compact(event.data.result ?? "")}`
    case "run.action.failed":
      return `${event.data.action} failed: ${event.data.error}`
    case "run.message":
      return `${event.data.role}: ${event.data.content}`
    case "run.input_request":
      return `asks: ${event.data.prompt}`
    case "run.completed":
      return `completed (${event.data.status})`
    default:
      return compact(event.data)
  }
}

const compact = (value: unknown): string => {
  if (value === undefined || value === null || value === "") return ""
  const text = typeof value === "string" ? value : JSON.stringify(value)
  return text.length > 240 ? `${text.slice(0, 240)}…` : text
}

export const EventLog = ({ events, state, detail }: { events: ReadonlyArray<StreamEvent>; state: StreamState; detail?: string | undefined }) => {
  const end = useRef<HTMLLIElement>(null)
  const [follow, setFollow] = useState(true)
  useEffect(() => {
    if (follow) end.current?.scrollIntoView({ block: "nearest" })
  }, [events.length, follow])
  return (
    <div className="events">
      <div className="events-head">
        <span className={`stream ${state}`} data-stream-state={state}>{state === "live" ? "● live" : state}{detail ? `: ${detail}` : ""}</span>
        <label className="inline small"><input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> follow</label>
      </div>
      {events.length > shownEvents ? <div className="muted small">{events.length - shownEvents} earlier events not shown</div> : null}
      <ol className="event-list" aria-label="events">
        {events.slice(-shownEvents).map((event) => (
          <li key={event.id} className={`event ${event.type.replace(/\./g, "-")}`} data-event-id={event.id} data-event-type={event.type} data-created-at={event.created_at}>
            <span className="event-id">#{event.id}</span>
            <span className="event-type">{event.type}</span>
            <span className="event-text">{describeEvent(event)}</span>
            {event.type === "run.screenshot"
              ? <a className="event-link" href={event.data.url} target="_blank" rel="noreferrer">view</a>
              : null}
          </li>
        ))}
        <li ref={end} className="event-end" />
      </ol>
    </div>
  )
}

/**
 * DoAnything: the project's sessions, a session with its runs, and a run with its live events,
 * where a person answers the agent's questions, sends it messages, cancels it, or takes control
 * of its browser (the control page the API issues, opened in a new tab).
 */
import { type FormEvent, useEffect, useMemo, useState } from "react"
import { type Api, describeError } from "../api.ts"
import { Link, navigate } from "../router.tsx"
import { ErrorBox, EventLog, Json, Section, Status, terminalStatuses, Time, useEventStream, useLoad } from "../ui.tsx"
import { Markdown } from "../markdown.tsx"
import type { StreamEvent, StreamEventOf } from "../events.ts"
import type { CancelRunBody, CreateRunBody, InterveneBody, Intervened, MessageBody, MessageQueued, Run, Session, SessionList } from "../wire.ts"

const NewSession = ({ api }: { api: Api }) => {
  const [instructions, setInstructions] = useState("")
  const [schema, setSchema] = useState("")
  const [record, setRecord] = useState(false)
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    let output_schema: unknown = undefined
    if (schema.trim() !== "") {
      try {
        output_schema = JSON.parse(schema)
      } catch {
        return setError("The output schema is not valid JSON.")
      }
    }
    setBusy(true)
    try {
      const session = await api.post<Session>(api.project("/do_anything/sessions"), {
        instructions,
        ...(output_schema !== undefined ? { output_schema: output_schema as CreateRunBody["output_schema"] } : {}),
        ...(record ? { recording: { enabled: true } } : {})
      } satisfies CreateRunBody)
      const rid = session.latest_run_id ?? session.runs[0]?.id
      navigate(rid ? `/sessions/${session.id}/runs/${rid}` : `/sessions/${session.id}`)
    } catch (failure) {
      setError(describeError(failure))
    } finally {
      setBusy(false)
    }
  }
  return (
    <form onSubmit={submit} className="stack" aria-label="new run">
      <label>
        Instructions
        <textarea name="instructions" rows={3} maxLength={10000} required value={instructions} onChange={(e) => setInstructions(e.target.value)}
          placeholder="Open https://example.com and return its title" />
      </label>
      <details>
        <summary>Options</summary>
        <label>Output JSON schema (optional)<textarea name="output_schema" rows={3} value={schema} onChange={(e) => setSchema(e.target.value)} placeholder='{"type":"object","properties":{"title":{"type":"string"}}}' /></label>
        <label className="inline"><input type="checkbox" checked={record} onChange={(e) => setRecord(e.target.checked)} /> record the run (replay afterwards)</label>
      </details>
      <ErrorBox error={error} />
      <div><button type="submit" disabled={busy}>{busy ? "Starting…" : "Start run"}</button></div>
    </form>
  )
}

export const SessionsPage = ({ api }: { api: Api }) => {
  const [cursors, setCursors] = useState<Array<string>>([])
  const cursor = cursors[cursors.length - 1]
  const sessions = useLoad(() => api.get<SessionList>(api.project(`/do_anything/sessions?limit=25${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)), [api, cursor])
  return (
    <>
      <Section title="New DoAnything run"><NewSession api={api} /></Section>
      <Section title="Sessions" actions={<button className="secondary" onClick={sessions.reload}>Refresh</button>}>
        <ErrorBox error={sessions.error} />
        <table className="list">
          <thead><tr><th>Session</th><th>Status</th><th>Latest run</th><th>Instructions</th><th>Cost</th><th>Created</th></tr></thead>
          <tbody>
            {sessions.data?.items.map((s) => {
              const latest = s.runs.find((r) => r.id === s.latest_run_id) ?? s.runs[s.runs.length - 1]
              return (
                <tr key={s.id}>
                  <td><Link to={`/sessions/${s.id}`}><code>{s.id}</code></Link></td>
                  <td><Status value={s.status} /></td>
                  <td>{latest ? <Link to={`/sessions/${s.id}/runs/${latest.id}`}><Status value={latest.status} /></Link> : null}</td>
                  <td className="clip">{latest?.instructions ?? <span className="muted">(observe)</span>}</td>
                  <td>${s.total_cost_usd}</td>
                  <td><Time value={s.created_at} /></td>
                </tr>
              )
            })}
          </tbody>
        </table>
        {sessions.data?.items.length === 0 ? <p className="muted">No sessions yet: start a run above.</p> : null}
        <div className="pager">
          {cursors.length > 0 ? <button className="secondary" onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button> : null}
          {sessions.data?.next_cursor ? <button className="secondary" onClick={() => setCursors([...cursors, sessions.data!.next_cursor!])}>Older</button> : null}
        </div>
      </Section>
    </>
  )
}

export const SessionPage = ({ api, sid }: { api: Api; sid: string }) => {
  const session = useLoad(() => api.get<Session>(api.project(`/do_anything/sessions/${sid}`)), [api, sid])
  const [instructions, setInstructions] = useState("")
  const [error, setError] = useState<string>()
  const s = session.data
  const latest = s?.runs.find((r) => r.id === s.latest_run_id)
  const followUp = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    try {
      const run = await api.post<Run>(api.project(`/do_anything/sessions/${sid}/runs`), { instructions } satisfies CreateRunBody)
      navigate(`/sessions/${sid}/runs/${run.id}`)
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  const close = async () => {
    try {
      await api.post<Session>(api.project(`/do_anything/sessions/${sid}/close`))
      session.reload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <>
      <p className="crumbs"><Link to="/">Sessions</Link> / <code>{sid}</code></p>
      <ErrorBox error={session.error} />
      {s === undefined ? null : (
        <>
          <Section title="Session" actions={s.status !== "closed" ? <button className="secondary" onClick={close}>Close session</button> : null}>
            <dl className="facts">
              <dt>Status</dt><dd><Status value={s.status} /></dd>
              <dt>Cost</dt><dd>LLM ${s.llm_cost_usd} · browser ${s.browser_cost_usd} · proxy ${s.proxy_cost_usd} · total ${s.total_cost_usd}</dd>
              <dt>Created</dt><dd><Time value={s.created_at} /></dd>
            </dl>
          </Section>
          <Section title="Runs">
            <table className="list">
              <thead><tr><th>Run</th><th>Status</th><th>Steps</th><th>Instructions</th><th>Created</th></tr></thead>
              <tbody>
                {s.runs.map((r) => (
                  <tr key={r.id}>
                    <td><Link to={`/sessions/${sid}/runs/${r.id}`}><code>{r.id}</code></Link></td>
                    <td><Status value={r.status} /></td>
                    <td>{r.step_count}</td>
                    <td className="clip">{r.instructions ?? <span className="muted">(observe)</span>}</td>
                    <td><Time value={r.created_at} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
            {latest && terminalStatuses.has(latest.status) && s.status !== "closed" ? (
              <form onSubmit={followUp} className="stack" aria-label="follow-up run">
                <label>Follow-up instructions (the browser keeps its state)<textarea rows={2} value={instructions} onChange={(e) => setInstructions(e.target.value)} required /></label>
                <div><button type="submit">Run in this session</button></div>
              </form>
            ) : null}
            <ErrorBox error={error} />
          </Section>
        </>
      )}
    </>
  )
}

/** The newest input request the run has not had answered yet, from its events. */
export const openInputRequest = (events: ReadonlyArray<StreamEvent>) => {
  let open: { id: string; prompt: string; schema: unknown } | undefined
  for (const event of events) {
    if (event.type === "run.input_request") {
      open = { id: event.data.input_request_id, prompt: event.data.prompt, schema: event.data.schema ?? null }
    } else if (event.type === "run.input_request_resolved" || event.type === "run.input_request_withdrawn" || event.type === "run.completed") open = undefined
  }
  return open
}

const AnswerForm = ({ api, runPath, request, onDone }: { api: Api; runPath: string; request: { id: string; prompt: string; schema: unknown }; onDone: () => void }) => {
  const [answer, setAnswer] = useState("")
  const [error, setError] = useState<string>()
  const wantsString = request.schema === null || (request.schema as { type?: string })?.type === "string"
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    let response: unknown = answer
    if (!wantsString) {
      try {
        response = JSON.parse(answer)
      } catch {
        response = answer
      }
    }
    try {
      await api.post<Intervened>(`${runPath}/intervene`, { kind: "answer_input_request", input_request_id: request.id, response } satisfies InterveneBody)
      setAnswer("")
      onDone()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <form className="ask" onSubmit={submit} aria-label="answer input request">
      <div className="ask-prompt"><strong>The agent asks:</strong> {request.prompt}</div>
      {request.schema !== null && !wantsString ? <details><summary>Expected answer (JSON schema)</summary><Json value={request.schema} /></details> : null}
      <div className="row">
        <input name="answer" value={answer} onChange={(e) => setAnswer(e.target.value)} placeholder={wantsString ? "Your answer" : "Your answer (JSON)"} required autoFocus />
        <button type="submit">Answer</button>
      </div>
      <ErrorBox error={error} />
    </form>
  )
}

export const RunPage = ({ api, sid, rid }: { api: Api; sid: string; rid: string }) => {
  const runPath = api.project(`/do_anything/sessions/${sid}/runs/${rid}`)
  const run = useLoad(() => api.get<Run>(runPath), [api, runPath])
  const stream = useEventStream<StreamEventOf<"do_anything">>(`${runPath}/events`, api.authorization())
  const [error, setError] = useState<string>()
  const [controlUrl, setControlUrl] = useState<string>()
  const [message, setMessage] = useState("")
  const { reload } = run

  // Re-read the run whenever its state moved (status, step, completion).
  const milestones = stream.events.filter((e) => e.type === "run.status_changed" || e.type === "run.completed" || e.type === "run.action.completed").length
  useEffect(() => {
    if (milestones > 0) reload()
  }, [milestones, reload])

  const pendingControl = useMemo(() => {
    return [...stream.events].reverse().find((e) => e.type === "run.take_control_pending")?.data.standalone_control_url
  }, [stream.events])
  const openRequest = openInputRequest(stream.events)
  const screenshot = [...stream.events].reverse().find((e) => e.type === "run.screenshot")
  const r = run.data
  const ended = r !== undefined && terminalStatuses.has(r.status)
  const steps = stream.events.filter((e) => e.type === "run.action.started").length

  const act = async (what: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await what()
      reload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  const takeControl = () =>
    act(async () => {
      const answer = await api.post<Intervened>(`${runPath}/intervene`, { kind: "take_control", reason: "from the console" } satisfies InterveneBody)
      if (answer.standalone_control_url) setControlUrl(answer.standalone_control_url)
    })
  const sendMessage = (event: FormEvent) => {
    event.preventDefault()
    void act(async () => {
      await api.post<MessageQueued>(`${runPath}/messages`, { content: message } satisfies MessageBody)
      setMessage("")
    })
  }
  const control = controlUrl ?? pendingControl
  return (
    <>
      <p className="crumbs"><Link to="/">Sessions</Link> / <Link to={`/sessions/${sid}`}><code>{sid}</code></Link> / <code>{rid}</code></p>
      <ErrorBox error={run.error} />
      {r === undefined ? null : (
        <Section title="Run" actions={
          <div className="row">
            {!ended ? <button className="secondary" onClick={takeControl}>Take control</button> : null}
            {!ended ? <button className="danger" onClick={() => act(() => api.post<Run>(`${runPath}/cancel`, { reason: "canceled in the console" } satisfies CancelRunBody))}>Cancel</button> : null}
          </div>
        }>
          <dl className="facts">
            <dt>Status</dt><dd data-testid="run-status"><Status value={r.status} />{r.terminal_reason ? <span className="muted"> ({r.terminal_reason})</span> : null}</dd>
            <dt>Progress</dt><dd>
              <progress max={r.max_steps} value={Math.max(r.step_count, steps)} /> step {Math.max(r.step_count, steps)} of at most {r.max_steps}
            </dd>
            <dt>Instructions</dt><dd>{r.instructions ?? <span className="muted">(observe the page)</span>}</dd>
            <dt>Cost</dt><dd>LLM ${r.llm_cost_usd}</dd>
            <dt>Started</dt><dd><Time value={r.started_at} /></dd>
            <dt>Finished</dt><dd><Time value={r.finished_at} /></dd>
            {r.recording?.replay_url ? <><dt>Recording</dt><dd><a href={r.recording.replay_url} target="_blank" rel="noreferrer">Replay</a></dd></> : null}
          </dl>
          {control !== undefined && !ended ? (
            <div className="notice">
              Live view and control: <a href={control} target="_blank" rel="noreferrer" data-testid="control-link">open the control page</a> (works without a key, for this run only, for a few minutes).
            </div>
          ) : null}
          {screenshot !== undefined ? (
            <figure className="latest-shot">
              <img src={screenshot.data.url} alt="the agent's browser at its latest step" data-testid="latest-screenshot" />
              <figcaption className="muted small">latest screenshot (event #{screenshot.id})</figcaption>
            </figure>
          ) : null}
          {openRequest !== undefined && !ended ? <AnswerForm api={api} runPath={runPath} request={openRequest} onDone={reload} /> : null}
          {r.error ? <div className="error" data-testid="run-error"><strong>{r.error.code}</strong>: {r.error.detail}</div> : null}
          {r.output !== null && r.output !== undefined ? (
            <div className="output" data-testid="run-output">
              <h3>Output</h3>
              {typeof r.output === "string" ? <Markdown source={r.output} /> : <Json value={r.output} />}
            </div>
          ) : null}
          {!ended ? (
            <form className="row" onSubmit={sendMessage} aria-label="message the agent">
              <input value={message} onChange={(e) => setMessage(e.target.value)} placeholder="Message the agent (read at its next step)" required />
              <button type="submit" className="secondary">Send</button>
            </form>
          ) : null}
          <ErrorBox error={error} />
        </Section>
      )}
      <Section title="Events"><EventLog events={stream.events} state={stream.state} detail={stream.detail} /></Section>
    </>
  )
}

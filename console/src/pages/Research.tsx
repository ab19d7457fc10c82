/**
 * DeepResearch: start research, follow its phases, approve (or edit, or reject) the outline at
 * the gate, and read the report with its citations and confidence.
 */
import { type FormEvent, useEffect, useState } from "react"
import { type Api, describeError } from "../api.ts"
import type { StreamEventOf } from "../events.ts"
import { Link, navigate } from "../router.tsx"
import { ErrorBox, EventLog, Section, Status, terminalStatuses, Time, useEventStream, useLoad } from "../ui.tsx"
import { Markdown } from "../markdown.tsx"
import type { Artifacts, CancelRunBody, CreateResearchBody, OutlineAnswerBody, OutlineEditBody, ResearchInterveneBody, ResearchPhase, ResearchRun, ResearchRunListPage } from "../wire.ts"

const phases = ["brief", "plan", "hitl_outline", "gather", "crosscheck", "synthesize"] as const satisfies ReadonlyArray<ResearchPhase>
type Depth = NonNullable<CreateResearchBody["depth"]>
const depths: ReadonlyArray<Depth> = ["light", "standard", "deep"]
const phaseLabel: Record<ResearchPhase, string> = { brief: "Brief", plan: "Outline", hitl_outline: "Approval", gather: "Sources", crosscheck: "Cross-check", synthesize: "Writing" }

/**
 * The claims of confidence.json, the report's per-claim confidence. The document declares the
 * artifact as any JSON (its shape is src/research/report.ts's, not the contract's), so it is read
 * as unknown and only what has this shape is shown.
 */
interface Claim { readonly text: string; readonly confidence: string; readonly citations: ReadonlyArray<number> }
interface ClaimSection { readonly section_id: string; readonly title: string; readonly claims: ReadonlyArray<Claim> }

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)
const isClaim = (value: unknown): value is Claim =>
  isRecord(value) && typeof value["text"] === "string" && typeof value["confidence"] === "string" &&
  Array.isArray(value["citations"]) && value["citations"].every((n) => typeof n === "number")
const isClaimSection = (value: unknown): value is ClaimSection =>
  isRecord(value) && typeof value["section_id"] === "string" && typeof value["title"] === "string" &&
  Array.isArray(value["claims"]) && value["claims"].every(isClaim)
const claimSections = (file: unknown): ReadonlyArray<ClaimSection> =>
  isRecord(file) && Array.isArray(file["sections"]) ? file["sections"].filter(isClaimSection) : []

const NewResearch = ({ api }: { api: Api }) => {
  const [topic, setTopic] = useState("")
  const [depth, setDepth] = useState<Depth>("standard")
  const [approval, setApproval] = useState(true)
  const [error, setError] = useState<string>()
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    try {
      const run = await api.post<ResearchRun>(api.project("/deep_research/runs"), { topic, depth, require_outline_approval: approval } satisfies CreateResearchBody)
      navigate(`/research/${run.id}`)
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <form className="stack" onSubmit={submit} aria-label="new research">
      <label>Topic<textarea name="topic" rows={2} maxLength={2000} required value={topic} onChange={(e) => setTopic(e.target.value)} placeholder="What do public sources say about…" /></label>
      <div className="row">
        <label>Depth <select name="depth" value={depth} onChange={(e) => setDepth(depths.find((d) => d === e.target.value) ?? "standard")}>{depths.map((d) => <option key={d}>{d}</option>)}</select></label>
        <label className="inline"><input type="checkbox" checked={approval} onChange={(e) => setApproval(e.target.checked)} /> approve the outline before sources are gathered</label>
      </div>
      <ErrorBox error={error} />
      <div><button type="submit">Start research</button></div>
    </form>
  )
}

export const ResearchListPage = ({ api }: { api: Api }) => {
  const runs = useLoad(() => api.get<ResearchRunListPage>(api.project("/deep_research/runs?limit=50")), [api])
  return (
    <>
      <Section title="New DeepResearch"><NewResearch api={api} /></Section>
      <Section title="Research runs" actions={<button className="secondary" onClick={runs.reload}>Refresh</button>}>
        <ErrorBox error={runs.error} />
        <table className="list">
          <thead><tr><th>Topic</th><th>Status</th><th>Phase</th><th>Depth</th><th>Created</th></tr></thead>
          <tbody>
            {runs.data?.items.map((r) => (
              <tr key={r.id}>
                <td className="clip"><Link to={`/research/${r.id}`}>{r.topic}</Link></td>
                <td><Status value={r.status} /></td>
                <td>{r.phase ? phaseLabel[r.phase] ?? r.phase : ""}</td>
                <td>{r.depth}</td>
                <td><Time value={r.created_at} /></td>
              </tr>
            ))}
          </tbody>
        </table>
        {runs.data?.items.length === 0 ? <p className="muted">No research yet.</p> : null}
      </Section>
    </>
  )
}

const Phases = ({ run }: { run: ResearchRun }) => {
  const done = terminalStatuses.has(run.status)
  const at = run.phase === null ? (done ? phases.length : -1) : phases.indexOf(run.phase)
  return (
    <ol className="phases" aria-label="phases">
      {phases.filter((p) => p !== "hitl_outline" || run.require_outline_approval).map((p) => {
        const i = phases.indexOf(p)
        const state = done && run.status === "done" ? "past" : i < at ? "past" : i === at ? (done ? "stopped" : "current") : "future"
        return <li key={p} className={state} data-phase={p} data-phase-state={state}>{phaseLabel[p]}</li>
      })}
    </ol>
  )
}

const OutlineGate = ({ api, runPath, run, onDone }: { api: Api; runPath: string; run: ResearchRun; onDone: () => void }) => {
  const outline = run.outline!
  const [removed, setRemoved] = useState<Set<string>>(new Set())
  const [titles, setTitles] = useState<Record<string, string>>({})
  const [note, setNote] = useState("")
  const [error, setError] = useState<string>()
  const answer = async (response: OutlineAnswerBody) => {
    setError(undefined)
    try {
      await api.post<ResearchRun>(`${runPath}/intervene`, { request_id: run.pending_request_id!, response } satisfies ResearchInterveneBody)
      onDone()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  const edits: Array<OutlineEditBody> = [
    ...outline.sections.filter((s) => removed.has(s.section_id)).map((s): OutlineEditBody => ({ op: "remove_section", section_id: s.section_id })),
    ...outline.sections
      .filter((s) => !removed.has(s.section_id) && titles[s.section_id] !== undefined && titles[s.section_id]!.trim() !== "" && titles[s.section_id] !== s.title)
      .map((s): OutlineEditBody => ({ op: "rename_section", section_id: s.section_id, title: titles[s.section_id]!.trim() })),
    ...(note.trim() !== "" ? [note.trim()] : [])
  ]
  return (
    <div className="gate" aria-label="outline approval">
      <h3>Approve the outline: {outline.title}</h3>
      <p className="muted">Sources are gathered only after you approve. Untick a section to drop it; edit a title to rename it.</p>
      <ol className="outline">
        {outline.sections.map((s) => (
          <li key={s.section_id} className={removed.has(s.section_id) ? "removed" : ""} data-section-id={s.section_id}>
            <label className="inline">
              <input type="checkbox" checked={!removed.has(s.section_id)} onChange={(e) => {
                const next = new Set(removed)
                if (e.target.checked) next.delete(s.section_id)
                else next.add(s.section_id)
                setRemoved(next)
              }} />
              <input className="title" aria-label={`title of ${s.section_id}`} value={titles[s.section_id] ?? s.title} onChange={(e) => setTitles({ ...titles, [s.section_id]: e.target.value })} />
            </label>
            <div className="small muted">{s.questions.join(" · ")}</div>
            <div className="small">queries: {s.queries.map((q) => <code key={q}>{q}</code>)}</div>
          </li>
        ))}
      </ol>
      <label>Note for the writer (optional)<input value={note} onChange={(e) => setNote(e.target.value)} maxLength={500} /></label>
      <div className="row">
        <button onClick={() => answer(edits.length === 0 ? "approve" : { action: "approve_with_edits", edits })}>{edits.length === 0 ? "Approve outline" : `Approve with ${edits.length} edit${edits.length > 1 ? "s" : ""}`}</button>
        <button className="danger" onClick={() => answer({ action: "reject", reason: note.trim() || "rejected in the console" })}>Reject</button>
      </div>
      <ErrorBox error={error} />
    </div>
  )
}

const Report = ({ api, runPath, run }: { api: Api; runPath: string; run: ResearchRun }) => {
  const result = run.result!
  const confidence = useLoad(async () => {
    const artifacts = await api.get<Artifacts>(`${runPath}/artifacts`)
    const file = artifacts.items.find((a) => a.name === "confidence.json")
    return file === undefined ? [] : claimSections(JSON.parse(await api.text(`${runPath}/artifacts/${file.id}`)))
  }, [api, runPath])
  const summary = result.confidence_summary
  return (
    <div className="report" data-testid="report">
      <div className="row">
        <span className="badge blue">{result.citations_count} citations</span>
        <span className="badge green" title="claims backed by independent sources">{summary.high} high</span>
        <span className="badge amber">{summary.medium} medium</span>
        <span className="badge red">{summary.low} low</span>
        <span className="muted small">confidence of the report's claims</span>
      </div>
      {result.partial_sections.length > 0 ? (
        <div className="notice">
          Incomplete sections: {result.partial_sections.map((p) => `${p.section_id} (${p.reason}, ${Math.round(p.coverage_ratio * 100)}% covered${p.blockers.length ? `: ${p.blockers.join(", ")}` : ""})`).join("; ")}
        </div>
      ) : null}
      <article><Markdown source={result.final_md} /></article>
      {confidence.data?.some((s) => s.claims.length > 0) ? (
        <details className="claims">
          <summary>Claims and their confidence</summary>
          {confidence.data.filter((s) => s.claims.length > 0).map((s) => (
            <div key={s.section_id}>
              <h4>{s.title}</h4>
              <ul>
                {s.claims.map((c, i) => (
                  <li key={i}><span className={`badge ${c.confidence === "high" ? "green" : c.confidence === "medium" ? "amber" : "red"}`}>{c.confidence}</span> {c.text} {c.citations.map((n) => <a key={n} className="cite" href={`#source-${n}`}>[{n}]</a>)}</li>
                ))}
              </ul>
            </div>
          ))}
        </details>
      ) : null}
    </div>
  )
}

export const ResearchRunPage = ({ api, rid }: { api: Api; rid: string }) => {
  const runPath = api.project(`/deep_research/runs/${rid}`)
  const run = useLoad(() => api.get<ResearchRun>(runPath), [api, runPath])
  const stream = useEventStream<StreamEventOf<"deep_research">>(`${runPath}/events`, api.authorization())
  const [error, setError] = useState<string>()
  const { reload } = run
  const milestones = stream.events.filter((e) => e.type !== "run.research.progress" && e.type !== "run.cost_update").length
  useEffect(() => {
    if (milestones > 0) reload()
  }, [milestones, reload])
  const progress = [...stream.events].reverse().find((e) => e.type === "run.research.progress")
  const r = run.data
  const ended = r !== undefined && terminalStatuses.has(r.status)
  const cancel = async () => {
    try {
      await api.post<ResearchRun>(`${runPath}/cancel`, { reason: "canceled in the console" } satisfies CancelRunBody)
      reload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <>
      <p className="crumbs"><Link to="/research">DeepResearch</Link> / <code>{rid}</code></p>
      <ErrorBox error={run.error} />
      {r === undefined ? null : (
        <Section title={r.topic} actions={!ended ? <button className="danger" onClick={cancel}>Cancel</button> : null}>
          <dl className="facts">
            <dt>Status</dt><dd data-testid="research-status"><Status value={r.status} />{r.terminal_reason ? <span className="muted"> ({r.terminal_reason})</span> : null}</dd>
            <dt>Depth</dt><dd>{r.depth}</dd>
            <dt>Cost</dt><dd>${r.total_cost_usd} <span className="muted">(LLM ${r.llm_cost_usd}{r.max_cost_usd ? ` of at most $${r.max_cost_usd}` : ""} · fee ${r.service_cost_usd})</span></dd>
            <dt>Finished</dt><dd><Time value={r.finished_at} /></dd>
          </dl>
          <Phases run={r} />
          {progress !== undefined && !ended ? <p className="muted small" data-testid="research-progress">{Object.entries(progress.data).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`).join(" · ")}</p> : null}
          {r.status === "awaiting_input" && r.pending_request_id && r.outline ? <OutlineGate api={api} runPath={runPath} run={r} onDone={reload} /> : null}
          {r.error ? <div className="error"><strong>{r.error.code}</strong>: {r.error.detail}</div> : null}
          {r.result ? <Report api={api} runPath={runPath} run={r} /> : null}
          {r.outline && r.status !== "awaiting_input" && !r.result ? (
            <details><summary>Outline ({r.outline.sections.length} sections)</summary><ol>{r.outline.sections.map((s) => <li key={s.section_id}>{s.title}</li>)}</ol></details>
          ) : null}
          <ErrorBox error={error} />
        </Section>
      )}
      <Section title="Events"><EventLog events={stream.events} state={stream.state} detail={stream.detail} /></Section>
    </>
  )
}

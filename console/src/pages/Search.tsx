/**
 * WebSearch: a batch of queries, the engines' progress while it runs, then the fused, re-ranked
 * results. The API has no list of searches, so this tab remembers the ones it started.
 */
import { type FormEvent, useEffect, useState } from "react"
import { type Api, describeError } from "../api.ts"
import { Link, navigate } from "../router.tsx"
import { ErrorBox, EventLog, Section, Status, terminalStatuses, Time, useEventStream, useLoad } from "../ui.tsx"
import type { StreamEventOf } from "../events.ts"
import type { SearchRun, WebSearchBody } from "../wire.ts"

const recentKey = "wa.console.searches"
const recent = (): Array<{ id: string; queries: Array<string>; at: string }> => {
  try {
    return JSON.parse(sessionStorage.getItem(recentKey) ?? "[]")
  } catch {
    return []
  }
}
const remember = (run: SearchRun) =>
  sessionStorage.setItem(recentKey, JSON.stringify([{ id: run.id, queries: run.request.queries, at: run.created_at }, ...recent().filter((r) => r.id !== run.id)].slice(0, 50)))

export const SearchPage = ({ api }: { api: Api }) => {
  const [queries, setQueries] = useState("")
  const [summarize, setSummarize] = useState(false)
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    const list = queries.split("\n").map((q) => q.trim()).filter((q) => q !== "")
    if (list.length === 0) return setError("Give at least one query.")
    setBusy(true)
    try {
      // wait: false answers at once; the run page follows the engines live.
      const run = await api.post<SearchRun>(api.project("/web_search/runs"), { queries: list, summarize, wait: false } satisfies WebSearchBody)
      remember(run)
      navigate(`/search/${run.id}`)
    } catch (failure) {
      setError(describeError(failure))
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <Section title="New WebSearch">
        <form className="stack" onSubmit={submit} aria-label="new search">
          <label>Queries (one per line)<textarea name="queries" rows={3} value={queries} onChange={(e) => setQueries(e.target.value)} required /></label>
          <label className="inline"><input type="checkbox" checked={summarize} onChange={(e) => setSummarize(e.target.checked)} /> summarize each result (slower, costs more)</label>
          <ErrorBox error={error} />
          <div><button type="submit" disabled={busy}>Search</button></div>
        </form>
      </Section>
      <Section title="Searches from this tab">
        <ul className="plain">
          {recent().map((r) => <li key={r.id}><Link to={`/search/${r.id}`}>{r.queries.join(" · ")}</Link> <span className="muted small"><Time value={r.at} /></span></li>)}
        </ul>
      </Section>
    </>
  )
}

export const SearchRunPage = ({ api, rid }: { api: Api; rid: string }) => {
  const runPath = api.project(`/web_search/runs/${rid}`)
  const run = useLoad(() => api.get<SearchRun>(runPath), [api, runPath])
  const stream = useEventStream<StreamEventOf<"web_search">>(`${runPath}/events`, api.authorization())
  const { reload } = run
  const changes = stream.events.filter((e) => e.type === "run.status_changed" || e.type === "run.completed").length
  useEffect(() => {
    if (changes > 0) reload()
  }, [changes, reload])
  const r = run.data
  const engines = stream.events.filter((e) => e.type === "run.search.progress")
  const finished = engines.filter((e) => e.data.status !== "started").length
  const started = engines.filter((e) => e.data.status === "started").length
  return (
    <>
      <p className="crumbs"><Link to="/search">WebSearch</Link> / <code>{rid}</code></p>
      <ErrorBox error={run.error} />
      {r === undefined ? null : (
        <Section title={r.request.queries.join(" · ")}>
          <dl className="facts">
            <dt>Status</dt><dd data-testid="search-status"><Status value={r.status} /></dd>
            <dt>Engines</dt><dd>{started > 0 ? <><progress max={started} value={finished} /> {finished} of {started} engine queries answered</> : (r.request.engines ?? ["default set"]).join(", ")}</dd>
            <dt>Finished</dt><dd><Time value={r.finished_at} /></dd>
            <dt>Cost</dt><dd data-testid="search-cost">${r.total_cost_usd} <span className="muted">(LLM ${r.llm_cost_usd} · fee ${r.service_cost_usd})</span></dd>
          </dl>
          {r.error ? <div className="error"><strong>{r.error.code}</strong>: {r.error.detail}</div> : null}
          {r.results ? (
            <>
              <p className="muted">{r.results.total_unique_results} unique results{r.results.unresponsive_engines.length ? `; no answer from ${r.results.unresponsive_engines.join(", ")}` : ""}</p>
              {r.results.engine_answer ? <div className="notice">{r.results.engine_answer}</div> : null}
              <ol className="results" data-testid="search-results">
                {r.results.results.map((hit) => (
                  <li key={hit.url} value={hit.final_rank}>
                    <a href={hit.url} target="_blank" rel="noopener noreferrer nofollow">{hit.title || hit.url}</a>
                    <div className="small muted">{hit.url} · {hit.source_engine} · “{hit.source_query}”{hit.dedup_count > 1 ? ` · found ${hit.dedup_count}×` : ""}</div>
                    <div>{hit.summary ?? hit.snippet}</div>
                  </li>
                ))}
              </ol>
            </>
          ) : !terminalStatuses.has(r.status) ? <p className="muted">Searching…</p> : null}
        </Section>
      )}
      <Section title="Events"><EventLog events={stream.events} state={stream.state} detail={stream.detail} /></Section>
    </>
  )
}

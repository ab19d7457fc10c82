/** Credits and usage: the balance by bucket, the period's charges, and the ledger. */
import { useState } from "react"
import type { Api } from "../api.ts"
import type { BillingAccount, Usage } from "../wire.ts"
import { ErrorBox, Section, Time, useLoad } from "../ui.tsx"

export const BillingPage = ({ api }: { api: Api }) => {
  const account = useLoad(() => api.get<BillingAccount>(api.project("/billing/account")), [api])
  const [cursors, setCursors] = useState<Array<string>>([])
  const cursor = cursors[cursors.length - 1]
  const usage = useLoad(() => api.get<Usage>(api.project(`/billing/usage?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)), [api, cursor])
  const a = account.data
  return (
    <>
      <Section title="Credits" actions={<button className="secondary" onClick={account.reload}>Refresh</button>}>
        <ErrorBox error={account.error} />
        {a ? (
          <div className="tiles" data-testid="credits">
            <div className="tile"><div className="muted small">balance</div><div className="big">${a.credit_balance_usd}</div><div className="small">monthly ${a.monthly_credits_usd} · additional ${a.additional_credits_usd}</div></div>
            <div className="tile"><div className="muted small">spent this period</div><div className="big">${a.total_cost_usd}</div><div className="small">LLM ${a.llm_cost_usd} · browser ${a.browser_cost_usd} · proxy ${a.proxy_cost_usd}</div></div>
            <div className="tile"><div className="muted small">period</div><div><Time value={a.period_start} /> → <Time value={a.period_end} /></div><div className="small">plan {a.plan} · {a.sessions_count} sessions</div></div>
          </div>
        ) : null}
      </Section>
      <Section title="Usage (credit ledger)">
        <ErrorBox error={usage.error} />
        <table className="list">
          <thead><tr><th>When</th><th>Kind</th><th>Bucket</th><th className="num">Amount</th><th>Run</th></tr></thead>
          <tbody>
            {usage.data?.items.map((e) => (
              <tr key={e.id}><td><Time value={e.created_at} /></td><td>{e.kind}</td><td>{e.bucket}</td><td className="num">{e.amount_usd}</td><td>{e.run_id ? <code>{e.run_id}</code> : ""}</td></tr>
            ))}
          </tbody>
        </table>
        {usage.data?.items.length === 0 ? <p className="muted">No entries this period.</p> : null}
        <div className="pager">
          {cursors.length > 0 ? <button className="secondary" onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button> : null}
          {usage.data?.next_cursor ? <button className="secondary" onClick={() => setCursors([...cursors, usage.data!.next_cursor!])}>Older</button> : null}
        </div>
      </Section>
    </>
  )
}

/**
 * API keys of the project: list (with the console user who created each, `user_id`), create (the
 * secret is shown once), revoke. Admin keys and tenant admins only.
 */
import { type FormEvent, useState } from "react"
import { type Api, describeError } from "../api.ts"
import { ErrorBox, Section, Time, useLoad } from "../ui.tsx"
import type { ApiKey, ApiKeyCreated, ApiKeyList, CreateApiKeyBody } from "../wire.ts"

export const KeysPage = ({ api }: { api: Api }) => {
  const keys = useLoad(() => api.get<ApiKeyList>(api.project("/api_keys")), [api])
  const [name, setName] = useState("")
  const [scope, setScope] = useState<ApiKey["scope"]>("run")
  const [secret, setSecret] = useState<string>()
  const [error, setError] = useState<string>()
  const create = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    try {
      const created = await api.post<ApiKeyCreated>(api.project("/api_keys"), { name: name.trim() || null, scope } satisfies CreateApiKeyBody)
      setSecret(created.secret_token ?? undefined)
      setName("")
      keys.reload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  const ownKey = (key: ApiKey) => api.credentials?.kind === "api_key" && api.credentials.token.startsWith(key.prefix)
  const me = api.credentials?.kind === "session" ? api.credentials.userId : undefined
  const revoke = async (key: ApiKey) => {
    const own = ownKey(key) ? " This console is signed in with it: after the grace window you must sign in with another key." : ""
    if (!confirm(`Revoke ${key.name ?? key.prefix}? It keeps working for a one-hour grace window.${own}`)) return
    try {
      await api.delete<ApiKey>(api.project(`/api_keys/${key.id}`))
      keys.reload()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  const forbidden = keys.error !== undefined && keys.error.includes("(forbidden)")
  return (
    <>
      <Section title="API keys">
        {forbidden ? <p className="notice">{api.isAccount ? "Managing keys needs the admin role in this project's tenant." : "Managing keys needs an admin key; you signed in with a run key."}</p> : <ErrorBox error={keys.error} />}
        <table className="list">
          <thead><tr><th>Name</th><th>Prefix</th><th>Scope</th><th>Created by</th><th>Created</th><th>Last used</th><th>Revoked</th><th /></tr></thead>
          <tbody>
            {keys.data?.items.map((k) => (
              <tr key={k.id}>
                <td>{k.name ?? <span className="muted">(unnamed)</span>}{ownKey(k) ? <span className="badge blue" title="the key this console signed in with">this console</span> : null}</td>
                <td><code>{k.prefix}…</code></td>
                <td>{k.scope}</td>
                <td data-testid="key-user">{k.user_id ? <><code>{k.user_id}</code>{k.user_id === me ? <span className="muted small"> (you)</span> : null}</> : k.created_by_key_id ? <span className="muted small">key <code>{k.created_by_key_id}</code></span> : <span className="muted">–</span>}</td>
                <td><Time value={k.created_at} /></td>
                <td><Time value={k.last_used_at ?? null} /></td>
                <td>{k.disabled_at ? <>yes, grace until <Time value={k.grace_until ?? null} /></> : ""}</td>
                <td>{k.disabled_at ? null : <button className="danger" onClick={() => revoke(k)}>Revoke</button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      {forbidden ? null : (
        <Section title="Create a key">
          <form className="row" onSubmit={create} aria-label="create key">
            <input placeholder="name (optional)" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
            <select value={scope} onChange={(e) => setScope(e.target.value === "admin" ? "admin" : "run")}><option value="run">run (products only)</option><option value="admin">admin</option></select>
            <button type="submit">Create</button>
          </form>
          {secret ? <div className="notice">New key (shown only now, copy it): <code data-testid="new-key">{secret}</code></div> : null}
          <ErrorBox error={error} />
        </Section>
      )}
    </>
  )
}


/**
 * Sign in with an API key and its project id (the first start prints both, `wa keys create`
 * prints them as JSON, which can be pasted whole). The pair is checked against the API before it
 * is kept: 401 means the key is wrong or revoked, 403 that it belongs to another project.
 * Console accounts (email and password, SSO) will add their form beside this one.
 */
import { type FormEvent, useState } from "react"
import { Api, ApiError, describeError } from "../api.ts"
import { type Credentials, looksLikeApiKey, parsePasted } from "../auth.ts"

export const SignIn = ({ onSignedIn, notice }: { onSignedIn: (credentials: Credentials) => void; notice?: string | undefined }) => {
  const [token, setToken] = useState("")
  const [projectId, setProjectId] = useState("")
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)

  const onKeyChange = (text: string) => {
    const pasted = parsePasted(text)
    setToken(pasted.token ?? text)
    if (pasted.projectId !== undefined) setProjectId(pasted.projectId)
  }

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    const key = token.trim()
    const pid = projectId.trim()
    if (!looksLikeApiKey(key)) return setError("An API key starts with wa_ followed by at least 28 letters and digits.")
    if (!/^proj_[A-Za-z0-9_-]+$/.test(pid)) return setError("A project id starts with proj_.")
    const credentials: Credentials = { kind: "api_key", token: key, projectId: pid }
    setBusy(true)
    try {
      await new Api(credentials).get(new Api(credentials).project("/billing/account"))
      onSignedIn(credentials)
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.status === 401 ? "This API key is not valid (unknown, malformed, or revoked)."
          : failure instanceof ApiError && failure.status === 403 ? "This API key belongs to another project."
          : describeError(failure)
      )
    } finally {
      setBusy(false)
    }
  }

  return (
    <div className="signin">
      <form className="card" onSubmit={submit} aria-label="sign in">
        <h1>Web Agent Service</h1>
        {notice !== undefined ? <div className="notice" role="status">{notice}</div> : null}
        <p className="muted">Sign in with an API key. It is kept in this tab only (session storage) and sent only to this service.</p>
        <label>
          API key
          <input name="api_key" type="password" autoComplete="off" spellCheck={false} placeholder="wa_… (or paste the JSON of wa keys create)"
            value={token} onChange={(e) => onKeyChange(e.target.value)} required />
        </label>
        <label>
          Project id
          <input name="project_id" autoComplete="off" spellCheck={false} placeholder="proj_…" value={projectId} onChange={(e) => setProjectId(e.target.value)} required />
        </label>
        {error !== undefined ? <div className="error" role="alert">{error}</div> : null}
        <button type="submit" disabled={busy}>{busy ? "Checking…" : "Sign in"}</button>
        <p className="muted small">The first start of the service prints a project id and an admin key; <code>wa keys create --project proj_…</code> makes more.</p>
      </form>
    </div>
  )
}

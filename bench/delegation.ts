/**
 * Signed-request (AK/SK) verification overhead, goal ≤ 0.2 ms per request:
 * - in process: the verification's own work for one request (parse the Authorization header,
 *   SHA-256 of a 300-byte body, build the canonical string, open the sealed secret with AES-GCM,
 *   HMAC-SHA256 and the constant-time compare), mean over many iterations;
 * - over HTTP against the real service (embedded PostgreSQL): p50 of a signed request that passes
 *   verification (one SELECT of the access key, one INSERT of the nonce) and then fails body
 *   validation (422, so nothing else runs), against the same request unsigned (401 at once, no
 *   database): the difference is the verification's cost on the wire; and for comparison a
 *   project read (GET .../do_anything/sessions) with an API key and with a delegation token.
 *
 *   node bench/delegation.ts [iterations]
 */
import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { makeCipher } from "../src/security/state-cipher.ts"
import { bodyHash, canonicalString, parseSignedHeader, signatureMatches, signRequest } from "../src/delegation/signing.ts"
import { createAccessKey, delegate, makeTenant, signed } from "../test/delegation/support.ts"
import { startService, stopAndClean } from "../test/support/service.ts"
import { quantile } from "./stats.ts"

const iterations = Number(process.argv[2] ?? 300)

const fmt = (values: ReadonlyArray<number>) => `p50 ${quantile(values, 0.5).toFixed(3)} ms, p95 ${quantile(values, 0.95).toFixed(3)} ms`

console.log(`measured under load (other work shares this machine's cores); ${iterations} HTTP iterations`)

// ---- in process ----------------------------------------------------------------------------
{
  const cipher = makeCipher(randomBytes(32))
  const accessKeyId = "wak_01m8000000000000000000000a"
  const secret = `wask_${randomBytes(32).toString("base64url")}`
  const sealed = cipher.seal(Buffer.from(secret), accessKeyId)
  const body = JSON.stringify({ mode: "interactive", agent: "bench", scopes: ["web_agent.do_anything:read"], redirectUri: "https://app.example.com/callback", state: "x".repeat(64), userId: "u-1", expiresIn: 3600 }).padEnd(300, " ")
  const header = signRequest({ accessKeyId, secret, method: "POST", pathWithQuery: "/api/v3/eak/delegations", body })
  const verifyOnce = () => {
    const parsed = parseSignedHeader(header)
    if (typeof parsed === "string") throw new Error(parsed)
    const key = Effect.runSync(cipher.open(sealed, accessKeyId)).toString("utf8")
    const canonical = canonicalString({ accessKeyId, timestamp: parsed.timestamp, nonce: parsed.nonce, method: "POST", pathWithQuery: "/api/v3/eak/delegations", bodySha256: bodyHash(body) })
    if (!signatureMatches(key, canonical, parsed.signature)) throw new Error("mismatch")
  }
  for (let i = 0; i < 2000; i++) verifyOnce()
  const n = 20000
  const start = performance.now()
  for (let i = 0; i < n; i++) verifyOnce()
  const perCall = (performance.now() - start) / n
  console.log(`in process, verification work per request (parse, body SHA-256, AES-GCM open, HMAC, compare): ${(perCall * 1000).toFixed(1)} µs`)
}

// ---- over HTTP -----------------------------------------------------------------------------
const service = await startService({ env: { WA_RATE_LIMIT_REQUESTS: "1000000", WA_AUTH_FAILURES_PER_MINUTE: "1000000" } })
try {
  const tenant = await makeTenant(service, "bench")
  const key = await createAccessKey(service, tenant)
  const { token } = await delegate(service, key, tenant.memberCookie, {}, tenant.projectId)
  const invalid = { mode: "interactive" }
  const time = async (run: () => Promise<{ status: number; text: string }>, expected: number) => {
    for (let i = 0; i < 20; i++) await run()
    const times: Array<number> = []
    for (let i = 0; i < iterations; i++) {
      const start = performance.now()
      const response = await run()
      times.push(performance.now() - start)
      if (response.status !== expected) throw new Error(`${response.status}: ${response.text}`)
    }
    return times
  }
  const signedTimes = await time(() => signed(service, key, "POST", "/api/v3/eak/delegations", invalid), 422)
  const unsignedTimes = await time(() => service.request("POST", "/api/v3/eak/delegations", { key: null, body: invalid }), 401)
  console.log(`signed request, verified then 422: ${fmt(signedTimes)}`)
  console.log(`same request unsigned, 401 at once: ${fmt(unsignedTimes)}`)
  console.log(`verification over HTTP (p50 difference, includes the key SELECT and the nonce INSERT): ${(quantile(signedTimes, 0.5) - quantile(unsignedTimes, 0.5)).toFixed(3)} ms`)
  const path = `/v1/projects/${tenant.projectId}/do_anything/sessions`
  const apiKey = (await service.request("POST", `/v1/projects/${tenant.projectId}/api_keys`, { key: tenant.adminToken, body: { name: "bench" } })).json.secret_token as string
  const keyTimes = await time(() => service.request("GET", path, { key: apiKey }), 200)
  const tokenTimes = await time(() => service.request("GET", path, { key: token }), 200)
  console.log(`GET ${path.replace(tenant.projectId, "{pid}")} with an API key: ${fmt(keyTimes)}`)
  console.log(`same with a delegation token (one SELECT per request, no cache, so revocation bites at once): ${fmt(tokenTimes)}`)
} finally {
  await stopAndClean(service)
}

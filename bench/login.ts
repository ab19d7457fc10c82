/**
 * Console sign-in cost:
 * - the KDF alone (scrypt N=2^15, r=8, p=1, the parameters passwords are hashed with), and the
 *   neighbouring costs for comparison: p50/p95 of `iterations` verifications each;
 * - POST /v1/auth/login end to end against the real service (embedded PostgreSQL): p50/p95 of
 *   sequential sign-ins, and the wall time of 8 concurrent ones (libuv's 4 threads run scrypt);
 * - the per-request price of a console session against an API key: p50 of a project read
 *   (GET .../do_anything/sessions) with each credential.
 *
 *   node bench/login.ts [iterations]
 */
import { Effect } from "effect"
import { hashPassword, verifyPassword } from "../src/accounts/passwords.ts"
import { createUser, loginBearer } from "../test/accounts/support.ts"
import { startService, stopAndClean } from "../test/support/service.ts"
import { quantile } from "./stats.ts"

const iterations = Number(process.argv[2] ?? 30)

const fmt = (values: ReadonlyArray<number>) => `p50 ${quantile(values, 0.5).toFixed(1)} ms, p95 ${quantile(values, 0.95).toFixed(1)} ms`

const timeKdf = async (N: number) => {
  const stored = await Effect.runPromise(hashPassword("benchmark password", { N, r: 8, p: 1 }))
  const times: Array<number> = []
  for (let i = 0; i < iterations; i++) {
    const start = performance.now()
    await Effect.runPromise(verifyPassword("benchmark password", stored))
    times.push(performance.now() - start)
  }
  return times
}

console.log(`measured under load (other work shares this machine's cores); ${iterations} iterations`)
for (const N of [2 ** 14, 2 ** 15, 2 ** 16]) {
  console.log(`scrypt N=2^${Math.log2(N)} r=8 p=1 (${(128 * N * 8) / 2 ** 20} MiB)${N === 2 ** 15 ? " [in use]" : ""}: ${fmt(await timeKdf(N))}`)
}

const service = await startService()
try {
  await createUser(service, "bench@example.com", "bench-password")
  const login = () => service.request("POST", "/v1/auth/login", { key: null, body: { email: "bench@example.com", password: "bench-password", session: "bearer" } })
  await login()
  const times: Array<number> = []
  for (let i = 0; i < iterations; i++) {
    const start = performance.now()
    const response = await login()
    times.push(performance.now() - start)
    if (response.status !== 200) throw new Error(`login ${response.status}: ${response.text}`)
  }
  console.log(`POST /v1/auth/login (HTTP, sequential): ${fmt(times)}`)
  const start = performance.now()
  const concurrent = await Promise.all(Array.from({ length: 8 }, login))
  if (concurrent.some((r) => r.status !== 200)) throw new Error("a concurrent login failed")
  console.log(`8 concurrent logins: ${(performance.now() - start).toFixed(0)} ms wall`)

  const path = `/v1/projects/${service.projectId}/do_anything/sessions?limit=1`
  const read = async (key: string) => {
    const samples: Array<number> = []
    for (let i = 0; i < iterations * 5; i++) {
      const start = performance.now()
      const response = await service.request("GET", path, { key })
      samples.push(performance.now() - start)
      if (response.status !== 200) throw new Error(`read ${response.status}: ${response.text}`)
    }
    return samples
  }
  console.log(`project read with an API key: ${fmt(await read(service.apiKey))}`)
  await createUser(service, "bench-member@example.com", "bench-password", ["--tenant", "ten_default", "--role", "member"])
  const memberToken = await loginBearer(service, "bench-member@example.com", "bench-password")
  console.log(`project read with a console session: ${fmt(await read(memberToken))}`)
} finally {
  await stopAndClean(service)
}

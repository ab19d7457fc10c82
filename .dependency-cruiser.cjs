/**
 * The layering of src/, as DESIGN.md states it, checked by `npm run lint:layers` (and CI).
 *
 * Imports run one way: http → products → run kernel / entities → shared capabilities →
 * browser / agent / reader → store → config / observability / net / security → domain.
 * Each folder of src/ has a rank below; a folder may import folders of its own rank or lower.
 * A sub-folder with a rank of its own (`billing/store`) is not part of its parent's rank: its files
 * are checked, and reached, at the sub-folder's rank.
 * There is no baseline of known violations: every violation fails the check.
 */
const ranks = {
  domain: 0,
  config: 1, observability: 1, net: 1,
  // The state cipher (AES-GCM of saved browser state, secrets, checkpoints) reads its key from AppConfig.
  security: 2,
  store: 2,
  // Billing's persistence (the credit ledger, credit holds, a run's charges, plans, auto-recharge):
  // a store, so the run store admits a run's credit hold and charges its steps in its own
  // transaction. It sits below the billing services (src/billing/, rank 5) that use it.
  "billing/store": 2,
  events: 3,
  // The fair shares of run work (lanes, round-robin between projects): every layer that starts
  // a unit of run work takes a slot.
  fairness: 3,
  browser: 4, agent: 4, reader: 4,
  // The safety boundary (policy, classifier): the agent and the browser guard apply it.
  safety: 4,
  // Cached scripts: recording a run's actions and replaying them (the agent loop uses it).
  cache: 4,
  // Shared capabilities the kernel and every product stand on.
  accounts: 5, auth: 5, billing: 5, delegation: 5, profiles: 5, recordings: 5,
  control: 5, webhooks: 5, schedules: 5, mail: 5, secrets: 5, workspaces: 5,
  // Web search over many engines (adapters, fusion, re-rank, summaries): WebSearch runs it,
  // DeepResearch gathers with it, Track watches search results with it.
  engines: 5,
  // The run kernel and the thin cluster entities.
  runs: 6, cluster: 6, entities: 6,
  // The products.
  "do-anything": 7, research: 7, search: 7, track: 7,
  http: 8,
  // Clients of the API: they must not load the server (see the client rules below).
  client: 9, cli: 9, eval: 9
}

const folders = Object.keys(ranks)
/** The sub-folders of `folder` that have a rank of their own. */
const rankedInside = (folder) => folders.filter((other) => other.startsWith(`${folder}/`))
const upward = folders.flatMap((from) => {
  const higher = folders.filter((to) => ranks[to] > ranks[from])
  if (higher.length === 0) return []
  // Sub-folders of a higher folder that are not higher themselves (billing/store under billing).
  const notHigher = higher.flatMap(rankedInside).filter((inside) => !higher.includes(inside))
  const excluded = (paths) => paths.length === 0 ? {} : { pathNot: paths.map((folder) => `^src/${folder}/`) }
  return [{
    name: `upward-from-${from}`,
    comment: `src/${from}/ (rank ${ranks[from]}) imports a folder of a higher layer`,
    severity: "error",
    from: { path: `^src/${from}/`, ...excluded(rankedInside(from)) },
    to: { path: `^src/(${higher.join("|")})/`, ...excluded(notHigher) }
  }]
})

/** The CLI's modules of client verbs: they talk to a running service over HTTP, like any client. */
const clientVerbs = "^src/cli/(client|render|config|eval|mcp|usage)\\.ts$"

/**
 * Products, each in one layout: service.ts (its rules), executor.ts (the work), its store if it has
 * SQL of its own, live.ts (its one layer, composed by src/server.ts). One product reaches another
 * only through that product's service.ts.
 */
const products = ["do-anything", "research", "search", "track"]

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "an import cycle ties modules together so none can be read or tested alone",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true }
    },
    {
      name: "billing-store-apart-from-run-store",
      comment: "the run store imports billing's store (a run's charge and hold commit with its work); the other way round would tie the two folders into one",
      severity: "error",
      from: { path: "^src/billing/store/" },
      to: { path: "^src/store/" }
    },
    {
      name: "domain-imports-nothing-of-ours",
      severity: "error",
      from: { path: "^src/domain/" },
      to: { path: "^src/", pathNot: "^src/domain/" }
    },
    {
      name: "nothing-below-http-imports-http",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/http/", "^src/(main|server)\\.ts$", "^src/cli/", "^src/client/"] },
      to: { path: "^src/http/" }
    },
    {
      name: "product-through-its-service",
      comment: "another product's internals (executor, store, schemas) are reached through its service.ts",
      severity: "error",
      from: { path: `^src/(${products.join("|")})/` },
      to: { path: `^src/(${products.join("|")})/`, pathNot: ["^src/$1/", "^src/[^/]+/service\\.ts$"] }
    },
    {
      name: "contract-imports-only-domain",
      comment: "the contract (http/api) and the SDK import only domain/ (and effect): the browser SDK bundles no server code",
      severity: "error",
      from: { path: ["^src/http/api/", "^src/client/"] },
      to: { path: "^src/", pathNot: ["^src/domain/", "^src/http/api/", "^src/client/"] }
    },
    {
      name: "client-loads-no-server-module",
      comment: "the SDK is the contract (http/api) and the domain schemas, nothing of the server",
      severity: "error",
      from: { path: "^src/client/" },
      to: { path: "^src/", pathNot: ["^src/client/", "^src/domain/", "^src/http/api/"] }
    },
    {
      name: "cli-client-verbs-load-no-server-module",
      comment: "the client verbs (`wa search`, `wa run`, `wa mcp`, `wa eval`, the usage text every verb prints) reach, directly or not, no server module",
      severity: "error",
      from: { path: [clientVerbs, "^src/eval/"] },
      to: { path: "^src/", pathNot: ["^src/client/", "^src/domain/", "^src/http/api/", clientVerbs, "^src/eval/"], reachable: true }
    },
    {
      name: "no-sql-in-http",
      comment: "handlers reach the database through a store or a service; only the app's layer wiring names SqlClient",
      severity: "error",
      from: { path: "^src/http/", pathNot: "^src/http/server/app\\.ts$" },
      // effect/sql as written (the resolver does not read package exports) or as resolved.
      to: { path: "^effect/sql|node_modules/effect/dist/sql/" }
    },
    {
      name: "http-through-services",
      comment: "handlers, views, middlewares and streams reach stores, entities, the cluster, the event bus and the browser through a product's or capability's service; only the app's layer wiring names them",
      severity: "error",
      from: { path: "^src/http/", pathNot: "^src/http/server/app\\.ts$" },
      to: { path: ["^src/store/", "^src/billing/store/", "^src/entities/", "^src/cluster/", "^src/events/", "^src/browser/"] }
    },
    ...upward
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Our modules, and effect's SQL modules (leaves) for the no-sql-in-http rule.
    includeOnly: ["^src/", "^effect/sql", "node_modules/effect/dist/sql/"],
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
    reporterOptions: { text: { highlightFocused: true } }
  }
}

/**
 * The credit ledger: an append-only table of integer micro-USD entries (+ credit, − debit) per
 * project and bucket, and a balance row per project that holds the ledger's sums.
 *
 * - Two buckets: `monthly` (granted per billing period, a calendar month in UTC; what is left when
 *   the period ends is written off by an `expire_monthly` entry) and `additional` (top-ups; never
 *   expire).
 * - Every write locks the project's balance row first (INSERT ... ON CONFLICT DO UPDATE), so the
 *   entries and the sums change together and charges of one project are serialised on every node.
 * - A charge spends monthly credits first, then additional ones; what the balance cannot cover is
 *   taken from the additional bucket. A charge is refused when the balance is already at or below
 *   zero, so the balance goes negative by at most the one charge that crossed zero. A `force`
 *   charge (work already done: a step's model tokens) is recorded even then; stopping the run that
 *   ran out (budget_exceeded) is what keeps those bounded. A split charge is two entries under one
 *   idempotency key, one per bucket.
 * - A charge whose idempotency key is already in the ledger is not recorded again (at-least-once
 *   execution charges exactly once).
 * - The balance is re-derivable: per bucket, the sum of the project's entries (`rederive`).
 *
 * This is the ledger's SQL: functions run inside the caller's transaction (the run store,
 * src/store/runs.ts, charges a step with its checkpoint), and LedgerStore (below), whose methods
 * are their own transactions, for the Ledger and Budget services (src/billing/).
 */
import { type Exhausted, type LedgerKind, LedgerKinds } from "../../domain/billing.ts"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { makeId } from "../../domain/ids.ts"
import { usdFromMicros } from "../../domain/money.ts"
import type { QuotaWarningData } from "../../domain/wire/inbox.ts"
import { withMethodSpans } from "../../observability/spans.ts"
import { ProjectId, SessionId } from "../../domain/run.ts"
import { decodeRows } from "../../domain/rows.ts"

export type Bucket = "monthly" | "additional"

/**
 * Kinds of entries (src/domain/billing.ts lists them). Charges start with `charge_` (charge_llm,
 * charge_browser, charge_proxy, charge_research, charge_search, charge_track; README, section
 * Billing) and count as the period's spend.
 */
export type EntryKind = LedgerKind

export interface Balance {
  readonly projectId: ProjectId
  readonly monthlyMicros: number
  readonly additionalMicros: number
  readonly totalMicros: number
  readonly periodStart: Date
  readonly periodEnd: Date
  /** Charges of the current period, as a positive amount (what the monthly budget cap limits). */
  readonly periodSpentMicros: number
}

export interface Entry {
  readonly id: string
  readonly kind: EntryKind
  readonly bucket: Bucket
  readonly amountMicros: number
  readonly runId: string | null
  readonly sessionId: SessionId | null
  readonly idempotencyKey: string
  readonly periodStart: Date
  readonly createdAt: Date
}

export interface ChargeInput {
  readonly projectId: ProjectId
  readonly kind: EntryKind
  /** Positive: the amount to take. */
  readonly micros: number
  readonly idempotencyKey: string
  readonly runId?: string | null
  readonly sessionId?: string | null
  /** Record it even when the balance is already at or below zero (the work was done). */
  readonly force?: boolean
}


export interface ChargeOutcome {
  /** False when the key was already recorded, or when the charge was refused. */
  readonly recorded: boolean
  /** The balance was at or below zero, or the cap reached (see `exhausted`): nothing recorded. */
  readonly refused: boolean
  readonly balance: Balance
  /** After this charge (or refusal): whether the project can pay for more work. */
  readonly exhausted: Exhausted | null
  /** The project's monthly budget cap in micro-USD (null: none). */
  readonly capMicros: number | null
}

/** USD (a JS number) to integer micro-USD. */

export interface BalanceRow {
  readonly project_id: ProjectId
  readonly monthly_micros: string
  readonly additional_micros: string
  readonly period_spent_micros: string
  readonly period_start: Date
  readonly period_end: Date
  readonly expired: boolean
}

export const toBalance = (row: Omit<BalanceRow, "expired">): Balance => {
  const monthlyMicros = Number(row.monthly_micros)
  const additionalMicros = Number(row.additional_micros)
  return {
    projectId: row.project_id,
    monthlyMicros,
    additionalMicros,
    totalMicros: monthlyMicros + additionalMicros,
    periodStart: new Date(row.period_start),
    periodEnd: new Date(row.period_end),
    periodSpentMicros: Number(row.period_spent_micros)
  }
}

export const balanceColumns = "project_id, monthly_micros::text, additional_micros::text, period_spent_micros::text, period_start, period_end"

/** The cap, micro-USD as text (null: none). */
const CapRow = Schema.Struct({ cap: Schema.NullOr(Schema.String) })

/**
 * The project's monthly budget cap (its monthly quota) in micro-USD, or null for none. The one
 * place the cap is looked up: the project's own cap when one is set (PUT /billing/budget; a null
 * there removes the cap), else its active subscription's monthly quota, else the default plan's.
 */
export const capMicrosOf = (sql: SqlClient.SqlClient, projectId: ProjectId): Effect.Effect<number | null, SqlError> =>
  decodeRows(CapRow)(sql`SELECT (${capSubquery(sql, projectId)}) AS cap`).pipe(
    Effect.map((rows) => rows[0]?.cap == null ? null : Number(rows[0].cap))
  )

/** The cap as a scalar subquery (null: none), so the balance lock can read it in the same statement. */
const capSubquery = (sql: SqlClient.SqlClient, projectId: ProjectId) =>
  sql`SELECT (CASE
      WHEN b.project_id IS NOT NULL THEN b.monthly_cap_micros
      WHEN p.project_id IS NOT NULL THEN p.monthly_quota_micros
      ELSE (SELECT monthly_quota_micros FROM plan_defaults)
    END)::text
    FROM (SELECT 1) AS one
      LEFT JOIN project_budgets b ON b.project_id = ${projectId}
      LEFT JOIN project_plans p ON p.project_id = ${projectId} AND p.subscription_status = 'active'`

/** Whether the project can pay for more work: credits left, and under its cap. */
export const exhaustedOf = (balance: Balance, capMicros: number | null): Exhausted | null =>
  balance.totalMicros <= 0 ? "credits" : capMicros !== null && balance.periodSpentMicros >= capMicros ? "budget" : null

/** The share of the cap at which the project gets its one warning of the period. */
export const WARNING_RATIO = 0.8

/**
 * The period's quota warning (`billing.quota_warning` in the project's inbox), once per period:
 * the notification's unique (tick_id, type) key is the project and the period.
 */
const warnOnce = (sql: SqlClient.SqlClient, balance: Balance, capMicros: number) => {
  const data: QuotaWarningData = {
    project_id: balance.projectId,
    period_start: balance.periodStart.toISOString(),
    period_end: balance.periodEnd.toISOString(),
    monthly_cap_usd: usdFromMicros(capMicros),
    spent_usd: usdFromMicros(balance.periodSpentMicros),
    warning_ratio: WARNING_RATIO
  }
  return sql`
    INSERT INTO inbox_notifications (id, project_id, monitor_id, tick_id, type, title, data)
    VALUES (${makeId("ntf")}, ${balance.projectId}, '', ${`budget:${balance.projectId}:${balance.periodStart.toISOString()}`},
      'billing.quota_warning', ${`${Math.floor(balance.periodSpentMicros * 100 / Math.max(capMicros, 1))} % of the monthly budget spent`},
      ${JSON.stringify(data)}::jsonb)
    ON CONFLICT (tick_id, type) DO NOTHING`
}

/**
 * Locks the project's balance row (creating it for the current period), and writes off the
 * monthly credits of a period that has ended. Must run inside a transaction.
 */
export const lockBalance = (sql: SqlClient.SqlClient, projectId: ProjectId): Effect.Effect<Balance & { readonly capMicros: number | null }, SqlError> =>
  Effect.gen(function*() {
    // The cap comes with the lock (one round trip); its lookup is capMicrosOf's.
    const [raw] = yield* sql`
      INSERT INTO credit_balances (project_id, period_start, period_end)
      VALUES (${projectId}, date_trunc('month', now(), 'UTC'), date_trunc('month', now(), 'UTC') + interval '1 month')
      ON CONFLICT (project_id) DO UPDATE SET updated_at = now()
      RETURNING ${sql.literal(balanceColumns)}, period_end <= now() AS expired, (xmax = 0) AS inserted, (${capSubquery(sql, projectId)}) AS cap`
    const row = decodeLockedBalance(raw)
    const capMicros = row.cap === null ? null : Number(row.cap)
    const balance = toBalance(row)
    // A period opens (the first write ever, or the first after the last period ended): the plan's grant.
    if (!row.expired) return { ...(row.inserted ? yield* grantMonthlyInTransaction(sql, balance) : balance), capMicros }
    if (balance.monthlyMicros !== 0) {
      yield* sql`
        INSERT INTO credit_ledger (project_id, kind, bucket, amount_micros, idempotency_key, period_start)
        VALUES (${projectId}, 'expire_monthly', 'monthly', ${-balance.monthlyMicros},
          ${`expire_monthly:${projectId}:${balance.periodStart.toISOString()}`}, ${balance.periodStart})
        ON CONFLICT DO NOTHING`
    }
    const [next] = yield* sql`
      UPDATE credit_balances SET monthly_micros = 0, period_spent_micros = 0,
        period_start = date_trunc('month', now(), 'UTC'), period_end = date_trunc('month', now(), 'UTC') + interval '1 month'
      WHERE project_id = ${projectId}
      RETURNING ${sql.literal(balanceColumns)}, false AS expired`
    return { ...(yield* grantMonthlyInTransaction(sql, toBalance(decodeBalanceRow(next)))), capMicros }
  })

/** The idempotency key of a project's monthly grant for the period starting at `periodStart`. */
export const monthlyGrantKey = (projectId: ProjectId, periodStart: Date) => `grant_monthly:${projectId}:${periodStart.toISOString()}`

/** The grant recorded, micro-USD as text. */
const GrantedRow = Schema.Struct({ amount: Schema.String })

/**
 * Grants the monthly credits of the project's subscription (project_plans, src/billing/plans.ts)
 * for the balance's period, once per project and period (monthlyGrantKey). Needs the balance row
 * locked (lockBalance), inside a transaction.
 */
export const grantMonthlyInTransaction = (sql: SqlClient.SqlClient, balance: Balance): Effect.Effect<Balance, SqlError> =>
  Effect.gen(function*() {
    const granted = yield* decodeRows(GrantedRow)(sql`
      INSERT INTO credit_ledger (project_id, kind, bucket, amount_micros, idempotency_key, period_start)
      SELECT project_id, 'grant_monthly', 'monthly', monthly_credits_micros, ${monthlyGrantKey(balance.projectId, balance.periodStart)}, ${balance.periodStart}
      FROM project_plans
      WHERE project_id = ${balance.projectId} AND subscription_status = 'active' AND monthly_credits_micros > 0
      ON CONFLICT DO NOTHING
      RETURNING amount_micros::text AS amount`)
    if (granted.length === 0) return balance
    const [next] = yield* sql`
      UPDATE credit_balances SET monthly_micros = monthly_micros + ${Number(granted[0]!.amount)}, updated_at = now()
      WHERE project_id = ${balance.projectId}
      RETURNING ${sql.literal(balanceColumns)}, false AS expired`
    const opened = toBalance(decodeBalanceRow(next))
    yield* rearmAutoRecharge(sql, opened)
    return opened
  })

/** An entry found (`SELECT 1`). */
const OneRow = Schema.Struct({ one: Schema.Number })

const alreadyRecorded = (sql: SqlClient.SqlClient, key: string) =>
  decodeRows(OneRow)(sql`SELECT 1 AS one FROM credit_ledger WHERE idempotency_key = ${key} LIMIT 1`).pipe(
    Effect.map((rows) => rows.length > 0)
  )

interface PendingEntry {
  readonly input: Omit<ChargeInput, "micros">
  readonly bucket: Bucket
  readonly micros: number
}

/**
 * Appends entries (of one project) and adds them to its sums, in one statement; the row is locked,
 * so the new sums are computed here.
 */
const append = (sql: SqlClient.SqlClient, projectId: ProjectId, balance: Balance, entries: ReadonlyArray<PendingEntry>) =>
  Effect.gen(function*() {
    const rows = entries.filter((entry) => entry.micros !== 0).map((entry) => ({
      project_id: projectId,
      kind: entry.input.kind,
      bucket: entry.bucket,
      amount_micros: entry.micros,
      run_id: entry.input.runId ?? null,
      session_id: entry.input.sessionId ?? null,
      idempotency_key: entry.input.idempotencyKey,
      period_start: balance.periodStart
    }))
    const sum = (keep: (entry: PendingEntry) => boolean) => entries.filter(keep).reduce((total, e) => total + e.micros, 0)
    const monthly = sum((e) => e.bucket === "monthly")
    const additional = sum((e) => e.bucket === "additional")
    const spent = -sum((e) => e.input.kind.startsWith("charge_"))
    if (rows.length === 0) return balance
    // What each run was charged shrinks its credit hold (src/billing/store/credit-holds.ts) by as much.
    const chargedByRun = new Map<string, number>()
    for (const row of rows) {
      if (row.run_id !== null && row.kind.startsWith("charge_")) chargedByRun.set(row.run_id, (chargedByRun.get(row.run_id) ?? 0) - row.amount_micros)
    }
    const charged = JSON.stringify([...chargedByRun].map(([run_id, micros]) => ({ run_id, micros })))
    yield* sql`
      WITH entries AS (INSERT INTO credit_ledger ${sql.insert(rows as unknown as [Record<string, unknown>, ...Array<Record<string, unknown>>])} RETURNING 1),
      held AS (
        UPDATE credit_holds h SET charged_micros = h.charged_micros + c.micros
        FROM jsonb_to_recordset(${charged}::jsonb) AS c(run_id text, micros bigint)
        WHERE h.run_id = c.run_id
      )
      UPDATE credit_balances SET monthly_micros = monthly_micros + ${monthly}, additional_micros = additional_micros + ${additional},
        period_spent_micros = period_spent_micros + ${spent}, updated_at = now()
      WHERE project_id = ${projectId}`
    return {
      ...balance,
      monthlyMicros: balance.monthlyMicros + monthly,
      additionalMicros: balance.additionalMicros + additional,
      totalMicros: balance.totalMicros + monthly + additional,
      periodSpentMicros: balance.periodSpentMicros + spent
    } satisfies Balance
  })

export interface ChargesOutcome {
  /** Per input, in order: recorded, or refused (nothing recorded), or neither (key already recorded, or nothing to charge). */
  readonly outcomes: ReadonlyArray<{ readonly recorded: boolean; readonly refused: boolean }>
  readonly balance: Balance
  readonly exhausted: Exhausted | null
  readonly capMicros: number | null
}

/** An idempotency key already in the ledger. */
const KeyRow = Schema.Struct({ key: Schema.String })

/**
 * Records charges of one project, in order, each unless its idempotency key is already in the
 * ledger (monthly bucket first, then additional; a charge that is not forced is refused once the
 * project is exhausted). Three statements whatever their number: the balance lock (with the cap),
 * the keys already recorded, the entries with the new sums. Must run inside a transaction:
 * callers put it in the transaction of the work it pays for (RunStore.completeStep), so the work
 * and its charges commit together.
 */
export const chargeAllInTransaction = (
  sql: SqlClient.SqlClient,
  projectId: ProjectId,
  inputs: ReadonlyArray<Omit<ChargeInput, "projectId">>
): Effect.Effect<ChargesOutcome, SqlError> =>
  Effect.gen(function*() {
    const { capMicros, ...locked } = yield* lockBalance(sql, projectId)
    const keys = [...new Set(inputs.filter((input) => input.micros > 0).map((input) => input.idempotencyKey))]
    // Under the lock: a concurrent charge with the same key has committed or not started.
    const recorded = new Set(keys.length === 0 ? [] : (yield* decodeRows(KeyRow)(sql`
      SELECT DISTINCT idempotency_key AS key FROM credit_ledger WHERE idempotency_key IN ${sql.in(keys)}`)).map((row) => row.key))
    let current: Balance = locked
    const entries: Array<PendingEntry> = []
    const outcomes = inputs.map((input) => {
      if (input.micros <= 0 || recorded.has(input.idempotencyKey)) return { recorded: false, refused: false }
      if (exhaustedOf(current, capMicros) !== null && input.force !== true) return { recorded: false, refused: true }
      recorded.add(input.idempotencyKey)
      const full = { ...input, projectId }
      const fromMonthly = Math.min(Math.max(current.monthlyMicros, 0), input.micros)
      entries.push({ input: full, bucket: "monthly", micros: -fromMonthly }, { input: full, bucket: "additional", micros: -(input.micros - fromMonthly) })
      current = {
        ...current,
        monthlyMicros: current.monthlyMicros - fromMonthly,
        additionalMicros: current.additionalMicros - (input.micros - fromMonthly),
        totalMicros: current.totalMicros - input.micros,
        periodSpentMicros: current.periodSpentMicros + (input.kind.startsWith("charge_") ? input.micros : 0)
      }
      return { recorded: true, refused: false }
    })
    const balance = yield* append(sql, projectId, locked, entries)
    if (capMicros !== null && entries.length > 0 && balance.periodSpentMicros >= WARNING_RATIO * capMicros) yield* warnOnce(sql, balance, capMicros)
    return { outcomes, balance, exhausted: exhaustedOf(balance, capMicros), capMicros }
  })

/** One charge (see chargeAllInTransaction). Must run inside a transaction. */
export const chargeInTransaction = (
  sql: SqlClient.SqlClient,
  input: ChargeInput
): Effect.Effect<ChargeOutcome, SqlError> =>
  chargeAllInTransaction(sql, input.projectId, [input]).pipe(
    Effect.map(({ outcomes, balance, exhausted, capMicros }) => ({ ...outcomes[0]!, balance, exhausted, capMicros }))
  )

/** Credits a bucket (a grant or top-up) once per idempotency key. Must run inside a transaction. */
export const creditInTransaction = (
  sql: SqlClient.SqlClient,
  input: ChargeInput & { readonly bucket: Bucket }
): Effect.Effect<{ readonly recorded: boolean; readonly balance: Balance }, SqlError> =>
  Effect.gen(function*() {
    const { capMicros: _cap, ...balance } = yield* lockBalance(sql, input.projectId)
    if (input.micros <= 0 || (yield* alreadyRecorded(sql, input.idempotencyKey))) return { recorded: false, balance }
    const credited = yield* append(sql, input.projectId, balance, [{ input, bucket: input.bucket, micros: input.micros }])
    yield* rearmAutoRecharge(sql, credited)
    return { recorded: true, balance: credited }
  })

/**
 * A credit that lifts the balance back to the auto-recharge threshold re-arms it (src/billing/
 * auto-recharge.ts): the next fall below the threshold is a new crossing.
 */
const rearmAutoRecharge = (sql: SqlClient.SqlClient, balance: Balance) =>
  sql`UPDATE auto_recharge_settings SET armed = true
    WHERE project_id = ${balance.projectId} AND NOT armed AND threshold_micros <= ${balance.totalMicros}`

/** A page of the usage history (GET /v1/billing/usage). */
export interface UsageQuery {
  readonly kind?: string | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
  readonly limit: number
  /** Entries older than this ledger id (the previous page's last). */
  readonly beforeId?: string | undefined
}

/** Charges of a period by kind, positive micro-USD, and the sessions opened in it. */
export interface PeriodSums {
  readonly llmMicros: number
  readonly browserMicros: number
  readonly proxyMicros: number
  /** All charges (charge_*). */
  readonly totalMicros: number
  readonly sessionsCount: number
}

const BalanceRowSchema = Schema.Struct({
  project_id: ProjectId,
  monthly_micros: Schema.String,
  additional_micros: Schema.String,
  period_spent_micros: Schema.String,
  period_start: Schema.Date,
  period_end: Schema.Date,
  expired: Schema.Boolean
})
const decodeBalanceRow = Schema.decodeUnknownSync(BalanceRowSchema)
/** lockBalance's row: the balance, whether the lock created it, and the project's cap. */
const decodeLockedBalance = Schema.decodeUnknownSync(Schema.Struct({
  ...BalanceRowSchema.fields,
  inserted: Schema.Boolean,
  cap: Schema.NullOr(Schema.String)
}))
const decodePeriod = Schema.decodeUnknownSync(Schema.Struct({ period_start: Schema.Date, period_end: Schema.Date }))
const decodeBucketSum = Schema.decodeUnknownSync(Schema.Struct({ bucket: Schema.Literals(["monthly", "additional"]), total: Schema.FiniteFromString }))
const decodeEntry = Schema.decodeUnknownSync(Schema.Struct({
  id: Schema.String,
  kind: Schema.Literals(LedgerKinds),
  bucket: Schema.Literals(["monthly", "additional"]),
  amount_micros: Schema.FiniteFromString,
  run_id: Schema.NullOr(Schema.String),
  session_id: Schema.NullOr(SessionId),
  idempotency_key: Schema.String,
  period_start: Schema.Date,
  created_at: Schema.Date
}))
const decodeSums = Schema.decodeUnknownSync(Schema.Struct({
  llm: Schema.FiniteFromString,
  browser: Schema.FiniteFromString,
  proxy: Schema.FiniteFromString,
  total: Schema.FiniteFromString,
  sessions: Schema.Number
}))

/**
 * The ledger as a service, for the Ledger and Budget services (src/billing/): each method is its
 * own transaction (or one read). Code that charges inside the transaction of the work it pays for
 * uses the functions above instead.
 */
export class LedgerStore extends Context.Service<LedgerStore, {
  readonly charge: (input: ChargeInput) => Effect.Effect<ChargeOutcome>
  /** Credits a bucket once per idempotency key (see creditInTransaction). */
  readonly credit: (input: ChargeInput & { readonly bucket: Bucket }) => Effect.Effect<{ readonly recorded: boolean; readonly balance: Balance }>
  /**
   * The current balance (monthly credits of an ended period count as 0); 0 for a project never
   * credited. A period that is due to open (ended, or never written for a subscribed project) is
   * opened, with its grant.
   */
  readonly balance: (projectId: ProjectId) => Effect.Effect<Balance>
  /** Sums of the project's entries per bucket, recomputed from the ledger alone. */
  readonly rederive: (projectId: ProjectId) => Effect.Effect<{ readonly monthlyMicros: number; readonly additionalMicros: number }>
  readonly usage: (projectId: ProjectId, query: UsageQuery) => Effect.Effect<ReadonlyArray<Entry>>
  readonly periodSums: (projectId: ProjectId, periodStart: Date) => Effect.Effect<PeriodSums>
  /** The project's monthly budget cap (capMicrosOf). */
  readonly capMicros: (projectId: ProjectId) => Effect.Effect<number | null>
  /** Sets (micro-USD) or removes (null) the project's own cap. */
  readonly setCap: (projectId: ProjectId, capMicros: number | null) => Effect.Effect<void>
}>()("wa/store/LedgerStore") {
  static readonly layer = Layer.effect(
    LedgerStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return LedgerStore.of({
        ...withMethodSpans<Pick<LedgerStore["Service"], "charge" | "credit" | "periodSums" | "capMicros" | "setCap">>("LedgerStore", {
          charge: (input) => sql.withTransaction(chargeInTransaction(sql, input)).pipe(Effect.orDie),
          credit: (input) => sql.withTransaction(creditInTransaction(sql, input)).pipe(Effect.orDie),
          periodSums: (projectId, periodStart) =>
            sql`
              SELECT
                coalesce(-sum(amount_micros) FILTER (WHERE kind = 'charge_llm'), 0)::text AS llm,
                coalesce(-sum(amount_micros) FILTER (WHERE kind = 'charge_browser'), 0)::text AS browser,
                coalesce(-sum(amount_micros) FILTER (WHERE kind = 'charge_proxy'), 0)::text AS proxy,
                coalesce(-sum(amount_micros) FILTER (WHERE kind LIKE 'charge\\_%'), 0)::text AS total,
                (SELECT count(*)::int FROM sessions WHERE project_id = ${projectId} AND created_at >= ${periodStart}) AS sessions
              FROM credit_ledger
              WHERE project_id = ${projectId} AND period_start = ${periodStart}`.pipe(
              Effect.map((rows) => {
                const sums = decodeSums(rows[0])
                return { llmMicros: sums.llm, browserMicros: sums.browser, proxyMicros: sums.proxy, totalMicros: sums.total, sessionsCount: sums.sessions }
              }),
              Effect.orDie
            ),
          capMicros: (projectId) => capMicrosOf(sql, projectId).pipe(Effect.orDie),
          setCap: (projectId, capMicros) =>
            sql`
              INSERT INTO project_budgets (project_id, monthly_cap_micros) VALUES (${projectId}, ${capMicros})
              ON CONFLICT (project_id) DO UPDATE SET monthly_cap_micros = excluded.monthly_cap_micros, updated_at = now()`.pipe(Effect.asVoid, Effect.orDie)
        }),
        balance: Effect.fn("LedgerStore.balance")(function*(projectId: ProjectId) {
          const rows = yield* sql`
            SELECT ${sql.literal(balanceColumns)}, period_end <= now() AS expired
            FROM credit_balances WHERE project_id = ${projectId}`
          const row = rows[0] === undefined ? undefined : decodeBalanceRow(rows[0])
          // A period to open (ended, or never written for a subscribed project): open it, with its grant.
          if (row === undefined ? (yield* sql`SELECT 1 FROM project_plans WHERE project_id = ${projectId}`).length > 0 : row.expired) {
            return yield* sql.withTransaction(lockBalance(sql, projectId))
          }
          if (row === undefined) {
            const [period] = yield* sql`
              SELECT date_trunc('month', now(), 'UTC') AS period_start, date_trunc('month', now(), 'UTC') + interval '1 month' AS period_end`
            return toBalance({ project_id: projectId, monthly_micros: "0", additional_micros: "0", period_spent_micros: "0", ...decodePeriod(period) })
          }
          const found = toBalance(row)
          // The period ended and nothing was charged since: its monthly credits and its spend are gone.
          return row.expired ? { ...found, monthlyMicros: 0, totalMicros: found.additionalMicros, periodSpentMicros: 0 } : found
        }, Effect.orDie),
        rederive: Effect.fn("LedgerStore.rederive")(function*(projectId: ProjectId) {
          const rows = (yield* sql`
            SELECT bucket, sum(amount_micros)::text AS total FROM credit_ledger WHERE project_id = ${projectId} GROUP BY bucket`).map((row) => decodeBucketSum(row))
          const of = (bucket: Bucket) => rows.find((r) => r.bucket === bucket)?.total ?? 0
          return { monthlyMicros: of("monthly"), additionalMicros: of("additional") }
        }, Effect.orDie),
        usage: Effect.fn("LedgerStore.usage")(function*(projectId: ProjectId, query: UsageQuery) {
          const rows = yield* sql`
            SELECT id::text, kind, bucket, amount_micros::text, run_id, session_id, idempotency_key, period_start, created_at
            FROM credit_ledger
            WHERE project_id = ${projectId}
              ${query.kind === undefined ? sql`` : sql`AND kind = ${query.kind}`}
              ${query.from === undefined ? sql`` : sql`AND created_at >= ${query.from}`}
              ${query.to === undefined ? sql`` : sql`AND created_at < ${query.to}`}
              ${query.beforeId === undefined ? sql`` : sql`AND id < ${query.beforeId}::bigint`}
            ORDER BY id DESC
            LIMIT ${query.limit}`
          return rows.map((raw): Entry => {
            const row = decodeEntry(raw)
            return {
              id: row.id,
              kind: row.kind,
              bucket: row.bucket,
              amountMicros: row.amount_micros,
              runId: row.run_id,
              sessionId: row.session_id,
              idempotencyKey: row.idempotency_key,
              periodStart: row.period_start,
              createdAt: row.created_at
            }
          })
        }, Effect.orDie)
      })
    })
  )
}

/**
 * Why a project cannot pay for more work, and what a run ended for it says (billing's ledger
 * decides; the agent loop and the research entity report it).
 */
/**
 * The kinds of credit ledger entries (credit_ledger.kind), each written by one place: credits
 * `grant_monthly` (a plan's monthly grant, src/store/ledger.ts), `topup` (an operator's grant of
 * additional credits, src/billing/ledger.ts), `topup_stripe` (a Stripe checkout,
 * src/billing/stripe.ts), `topup_auto_recharge` (an automatic recharge, src/billing/auto-recharge.ts);
 * `expire_monthly` (unused monthly credits written off at the period's end); and the charges, whose
 * kinds start with `charge_` and count as the period's spend: `charge_llm`, `charge_browser`,
 * `charge_proxy` (read by the account view; nothing writes it yet: no proxy is used),
 * `charge_research`, `charge_search`, `charge_track`.
 */
export const LedgerKinds = [
  "grant_monthly", "topup", "topup_stripe", "topup_auto_recharge", "expire_monthly",
  "charge_llm", "charge_browser", "charge_proxy", "charge_research", "charge_search", "charge_track"
] as const
export type LedgerKind = typeof LedgerKinds[number]

/** Why a project cannot be charged more: its credits ran out, or its monthly budget cap was reached. */
export type Exhausted = "credits" | "budget"

/** error.detail of a run that ended budget_exceeded. */
export const budgetExceededDetail = (exhausted: Exhausted): string =>
  exhausted === "credits"
    ? "the project's credits ran out; what the run spent stays charged (add credits, then start a follow-up run)"
    : "the project's monthly budget cap was reached; what the run spent stays charged (raise the cap with PUT /billing/budget)"

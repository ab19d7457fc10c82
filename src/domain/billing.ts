/**
 * Why a project cannot pay for more work, and what a run ended for it says (billing's ledger
 * decides; the agent loop and the research entity report it).
 */
/** Why a project cannot be charged more: its credits ran out, or its monthly budget cap was reached. */
export type Exhausted = "credits" | "budget"

/** error.detail of a run that ended budget_exceeded. */
export const budgetExceededDetail = (exhausted: Exhausted): string =>
  exhausted === "credits"
    ? "the project's credits ran out; what the run spent stays charged (add credits, then start a follow-up run)"
    : "the project's monthly budget cap was reached; what the run spent stays charged (raise the cap with PUT /billing/budget)"

/**
 * Upgrade from the database of e7b3803, main when issue 26 was filed (2026-11-26; the parent of
 * 118f3c4, the first commit of its work, whose import-graph figures the issue quotes): migrations
 * 0001-0022, kept in 11 folders and ordered by the hand-kept record. See upgrade-suite.ts.
 */
import { upgradeSuite } from "./upgrade-suite.ts"

upgradeSuite("e7b3803")

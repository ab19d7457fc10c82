/**
 * The eval's vision task (canvas-button): the button is only drawn on a <canvas>, at a place
 * drawn at random at each load, and only a click inside it reveals the code. The plan of the
 * plan-following model finds it in the JPEG it is given and answers click_at in CSS pixels (the
 * image note's scale applied); without an image it is stuck. Real Chromium (a browser of the
 * test's own, screenshots as the service takes them: JPEG of the viewport) on the real site.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Browser, chromium, type Page } from "playwright-core"
import { type EvalSite, startEvalSite } from "../../src/eval/sites.ts"
import { evalTasks, type PlanStep, PlanStuck } from "../../src/eval/tasks.ts"
import { findColour, magenta } from "../../src/eval/vision.ts"

const task = evalTasks.find((t) => t.name === "canvas-button")!
let site: EvalSite
let browser: Browser

beforeAll(async () => {
  site = await startEvalSite()
  browser = await chromium.launch({ executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium", args: ["--no-sandbox"] })
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await site?.close()
})

/** The page as the agent's browser shows it, and a JPEG of its viewport. */
const load = async (deviceScaleFactor = 1): Promise<{ page: Page; jpeg: Uint8Array }> => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor })
  const page = await context.newPage()
  await page.goto(`${site.url}${task.path}`)
  const jpeg = new Uint8Array(await page.screenshot({ type: "jpeg", quality: 60 }))
  return { page, jpeg }
}

const planFor = (jpeg: Uint8Array | undefined, note: string): PlanStep =>
  task.plan({
    page: `url: ${site.url}${task.path}\n# Unlock your voucher\nPress the magenta Reveal button drawn on the panel below.\nNot pressed yet.\n\n${note}`,
    images: jpeg === undefined ? [] : [jpeg],
    results: [{ url: `${site.url}${task.path}` }],
    lastError: undefined,
    start: `${site.url}${task.path}`
  })

const status = (page: Page) => page.locator("#state").textContent()
const code = (page: Page) => page.locator("#code").textContent()

describe("vision task: canvas-button", () => {
  it("the button is somewhere else at each load, and the plan's click_at from the screenshot reveals the code", async () => {
    const places: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const { page, jpeg } = await load()
      const blob = findColour(jpeg, magenta)!
      places.push(`${Math.round(blob.left)},${Math.round(blob.top)}`)
      const step = planFor(jpeg, "Screenshot of the viewport attached (1280x800 px, the CSS pixels click_at and type_at take).")
      expect(step.tool).toBe("click_at")
      const { x, y } = step.args as { x: number; y: number }
      // The point is inside the drawn button: the page's own hit test accepts it.
      await page.mouse.click(x, y)
      await expect.poll(() => code(page)).toBe(`Success code: ${site.codeOf("canvas-button")}`)
      expect(await status(page)).toBe("Pressed.")
      await page.context().close()
    }
    expect(new Set(places).size, places.join(" ")).toBeGreaterThan(1)
  })

  it("an image at twice the CSS pixels is scaled back as the image note says", async () => {
    const { page, jpeg } = await load(2)
    const step = planFor(jpeg, "Screenshot of the viewport attached (2560x1600 px; divide image coordinates by 2 for click_at and type_at).")
    const { x, y } = step.args as { x: number; y: number }
    expect(x).toBeLessThan(1280)
    expect(y).toBeLessThan(800)
    await page.mouse.click(x, y)
    await expect.poll(() => code(page)).toContain("Success code: ")
    await page.context().close()
  })

  it("a click beside the button reveals nothing; without a screenshot the plan is stuck", async () => {
    const { page, jpeg } = await load()
    const blob = findColour(jpeg, magenta)!
    // The canvas corner farthest from the button.
    const canvas = (await page.locator("canvas").boundingBox())!
    await page.mouse.click(
      blob.x > canvas.x + canvas.width / 2 ? canvas.x + 5 : canvas.x + canvas.width - 5,
      blob.y > canvas.y + canvas.height / 2 ? canvas.y + 5 : canvas.y + canvas.height - 5
    )
    expect(await status(page)).toMatch(/^Missed at \(\d+, \d+\)\.$/)
    expect(await code(page)).toBe("")
    expect(site.solved.has("canvas-button")).toBe(true) // solved by the first test's clicks, not by this one's
    await page.context().close()
    expect(() => planFor(undefined, "")).toThrow(PlanStuck)
    expect(() => planFor(undefined, "")).toThrow(/needs vision/)
  })
})

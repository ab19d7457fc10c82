/**
 * Functions evaluated INSIDE the page (one frame at a time) by Playwright. Each must be
 * self-contained: Playwright sends its source text, so it may not reference anything outside
 * its own body. Shared state (element refs) lives on the frame's window under a symbol key,
 * so refs stay stable across observations of the same document.
 */

export interface SnapshotArgs {
  /** Ref prefix of this frame: "" for the main frame, "f1" for its first iframe, "f1f2" ... */
  readonly prefix: string
  /** Characters of plain text kept per line before it is cut with "…". */
  readonly textBudget: number
  /** Characters kept of an element's accessible name. */
  readonly nameBudget: number
}

export interface FrameSnapshot {
  /** Rendered lines; a line "\u0001<n>" stands for the iframe numbered n (indentation kept). */
  readonly text: string
  /** Number of refs emitted in this frame. */
  readonly refs: number
  /** Vertical scroll position and its maximum, in CSS pixels. */
  readonly scrollY: number
  readonly scrollMax: number
}

/**
 * Walks the composed DOM (open shadow roots, slots) of the current frame and returns the
 * compact text snapshot. Output grammar (one item per line, one space of indent per level):
 *   # Heading                  (## for h2 ...)
 *   plain text, cut at textBudget…
 *   role "name" [ref] ="value" state…     interactive element, inline within text lines
 *   nav: / form: / dialog "name":         landmark container, children indented
 *   row | cells | joined                  table rows on one line
 */
export function snapshotFrame(args: SnapshotArgs): FrameSnapshot {
  const KEY = Symbol.for("web-agent-service.refs")
  type State = { next: number; ids: WeakMap<Element, number>; els: Map<number, WeakRef<Element>>; nextFrame: number; frames: WeakMap<Element, number> }
  const w = window as unknown as Record<symbol, State | undefined>
  let st = w[KEY]
  if (st === undefined) {
    st = { next: 1, ids: new WeakMap(), els: new Map(), nextFrame: 1, frames: new WeakMap() }
    Object.defineProperty(window, KEY, { value: st, enumerable: false, configurable: true })
  }
  const state = st
  const { prefix, textBudget, nameBudget } = args

  type Item =
    | { k: "t"; s: string } // text
    | { k: "e"; s: string; name: string } // element token
    | { k: "b" } // line break
    | { k: "sep" } // table cell separator
    | { k: "in"; head: string } // open container (indent +1 after a header line)
    | { k: "out" } // close container
    | { k: "h"; level: number } // heading start (prefix for the next line)
  const items: Array<Item> = []
  let refCount = 0

  const norm = (s: string) => s.replace(/[\s\u200b\u00a0]+/g, " ")
  const cut = (s: string, n: number) => (s.length > n ? s.slice(0, Math.max(1, n - 1)).trimEnd() + "…" : s)
  const quote = (s: string) => JSON.stringify(s)

  const refOf = (el: Element): string => {
    let id = state.ids.get(el)
    if (id === undefined) {
      id = state.next++
      state.ids.set(el, id)
      state.els.set(id, new WeakRef(el))
    }
    refCount++
    return `${prefix}e${id}`
  }

  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE", "BASE", "CANVAS", "OBJECT", "EMBED", "PARAM", "SOURCE", "TRACK", "MAP", "AREA", "DATALIST", "OPTION", "OPTGROUP", "HR"])
  const WIDGET_ROLES = new Set(["button", "link", "checkbox", "radio", "switch", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "combobox", "textbox", "searchbox", "slider", "spinbutton", "listbox", "treeitem", "gridcell", "columnheader", "scrollbar"])
  const LANDMARKS: Record<string, string> = {
    NAV: "nav", MAIN: "main", FOOTER: "footer", ASIDE: "aside", FORM: "form", DIALOG: "dialog", HEADER: "header"
  }
  const LANDMARK_ROLES: Record<string, string> = {
    navigation: "nav", main: "main", contentinfo: "footer", complementary: "aside", form: "form", dialog: "dialog",
    alertdialog: "dialog", search: "search", banner: "header", menu: "menu", menubar: "menu", tablist: "tabs", alert: "alert"
  }

  const textOf = (root: Node, skip?: Element): string => {
    let out = ""
    const visit = (n: Node) => {
      if (n.nodeType === 3) {
        out += n.nodeValue ?? ""
        return
      }
      if (n.nodeType !== 1) return
      const e = n as Element
      if (e === skip || SKIP.has(e.tagName) || e.tagName === "SELECT" || e.tagName === "TEXTAREA") return
      if (e.tagName === "IMG") {
        out += " " + (e.getAttribute("alt") ?? "") + " "
        return
      }
      const kids = e.shadowRoot ? e.shadowRoot.childNodes : e.childNodes
      for (const c of Array.from(kids)) visit(c)
      if (e.tagName === "BR" || e.tagName === "P" || e.tagName === "DIV") out += " "
    }
    visit(root)
    return norm(out).trim()
  }

  const byIds = (el: Element, attr: string): string => {
    const ids = (el.getAttribute(attr) ?? "").split(/\s+/).filter(Boolean)
    const root = el.getRootNode() as Document | ShadowRoot
    return ids.map((id) => {
      const t = root.getElementById ? root.getElementById(id) : document.getElementById(id)
      return t ? textOf(t) : ""
    }).join(" ").trim()
  }

  const roleOf = (el: Element): string | undefined => {
    const explicit = (el.getAttribute("role") ?? "").trim().split(/\s+/)[0]
    if (explicit) return explicit
    switch (el.tagName) {
      case "A":
        return el.hasAttribute("href") ? "link" : undefined
      case "BUTTON":
        return "button"
      case "SELECT":
        return (el as HTMLSelectElement).multiple || (el as HTMLSelectElement).size > 1 ? "listbox" : "combobox"
      case "TEXTAREA":
        return "textbox"
      case "SUMMARY":
        return "button"
      case "INPUT": {
        const t = (el as HTMLInputElement).type
        if (t === "hidden") return undefined
        if (t === "checkbox" || t === "radio") return t
        if (t === "button" || t === "submit" || t === "reset" || t === "image") return "button"
        if (t === "range") return "slider"
        if (t === "number") return "spinbutton"
        if (t === "search") return "searchbox"
        if (t === "file") return "file"
        if (el.hasAttribute("list")) return "combobox"
        return "textbox"
      }
    }
    return undefined
  }

  const nameOf = (el: Element, role: string, fallbackText: string): string => {
    let name = ""
    if (el.hasAttribute("aria-labelledby")) name = byIds(el, "aria-labelledby")
    if (!name) name = norm(el.getAttribute("aria-label") ?? "").trim()
    if (!name && (el.tagName === "INPUT" || el.tagName === "SELECT" || el.tagName === "TEXTAREA")) {
      const input = el as HTMLInputElement
      const t = input.type
      if (el.tagName === "INPUT" && (t === "submit" || t === "button" || t === "reset")) name = input.value || (t === "submit" ? "Submit" : "")
      if (!name && t === "image") name = el.getAttribute("alt") ?? ""
      if (!name && input.labels) name = Array.from(input.labels).map((l) => textOf(l, el)).join(" ").trim()
      if (!name) name = el.getAttribute("placeholder") ?? ""
    }
    if (!name && role !== "textbox" && role !== "combobox" && role !== "searchbox") name = fallbackText
    if (!name) name = norm(el.getAttribute("title") ?? "").trim()
    if (!name && el.tagName !== "A") name = el.getAttribute("name") ?? ""
    return cut(name, nameBudget)
  }

  const statesOf = (el: Element, role: string): string => {
    const out: Array<string> = []
    const tag = el.tagName
    if (tag === "INPUT" || tag === "TEXTAREA") {
      const input = el as HTMLInputElement
      if (input.type === "checkbox" || input.type === "radio") {
        if (input.checked) out.push("checked")
      } else if (input.type === "password" || el.hasAttribute("data-wa-secret")) {
        // A field a run typed a secret into (src/browser/actions.ts concealField) shows dots too.
        if (input.value) out.push(`="${"•".repeat(Math.min(8, input.value.length))}"`)
      } else if (input.type !== "submit" && input.type !== "button" && input.type !== "reset" && input.type !== "image" && input.value) {
        out.push("=" + quote(cut(norm(input.value), 80)))
      }
    } else if (tag === "SELECT") {
      const select = el as HTMLSelectElement
      const chosen = Array.from(select.selectedOptions).map((o) => norm(o.text).trim())
      if (chosen.length) out.push("=" + quote(cut(chosen.join(", "), 60)))
      const options = Array.from(select.options).map((o) => cut(norm(o.text).trim(), 24)).filter(Boolean)
      const shown = options.slice(0, 8).join("|")
      out.push(`{${shown}${options.length > 8 ? `|+${options.length - 8}` : ""}}`)
    } else if ((el as HTMLElement).isContentEditable && el.hasAttribute("data-wa-secret")) {
      out.push("=\"••••••••\"")
    } else if ((el as HTMLElement).isContentEditable) {
      const t = cut(textOf(el), 80)
      if (t) out.push("=" + quote(t))
    }
    const aria = (n: string) => el.getAttribute(n)
    if (aria("aria-checked") === "true" && role !== "checkbox" && role !== "radio") out.push("checked")
    if (aria("aria-checked") === "true" && (role === "checkbox" || role === "radio") && tag !== "INPUT") out.push("checked")
    if (aria("aria-pressed") === "true") out.push("pressed")
    if (aria("aria-selected") === "true") out.push("selected")
    if (aria("aria-expanded") === "true") out.push("expanded")
    if (aria("aria-expanded") === "false") out.push("collapsed")
    if ((el as HTMLButtonElement).disabled || aria("aria-disabled") === "true") out.push("disabled")
    if (tag === "SUMMARY" && el.parentElement?.tagName === "DETAILS") {
      out.push((el.parentElement as HTMLDetailsElement).open ? "expanded" : "collapsed")
    }
    return out.length ? " " + out.join(" ") : ""
  }

  const childrenOf = (el: Element): ArrayLike<Node> => {
    if (el.shadowRoot) return el.shadowRoot.childNodes
    if (el.tagName === "SLOT") {
      const assigned = (el as HTMLSlotElement).assignedNodes({ flatten: true })
      return assigned.length ? assigned : el.childNodes
    }
    return el.childNodes
  }

  const INLINE = new Set(["inline", "inline-block", "inline-flex", "inline-grid", "ruby"])

  const isToggle = (el: Element): el is HTMLInputElement =>
    el.tagName === "INPUT" && ((el as HTMLInputElement).type === "checkbox" || (el as HTMLInputElement).type === "radio")
  // A checkbox or radio drawn by its label (Bootstrap's btn-check, tile pickers): the input is
  // hidden, clipped, transparent or takes no pointer events, so only the label can be clicked.
  const concealed = (input: HTMLInputElement): boolean => {
    const s = getComputedStyle(input)
    if (s.display === "none" || s.visibility !== "visible" || Number(s.opacity) === 0 || s.pointerEvents === "none") return true
    if (s.clip.startsWith("rect(0") || (s.clipPath !== "none" && s.clipPath !== "")) return true
    const r = input.getBoundingClientRect()
    return r.width * r.height <= 4 || r.right < -100
  }
  const labelShown = (input: HTMLInputElement): boolean =>
    Array.from(input.labels ?? []).some((l) => l.getClientRects().length > 0 && getComputedStyle(l).visibility === "visible")
  // Drag sources and drop zones as drag-and-drop libraries mark them (HTML5 draggable, ARIA,
  // jQuery UI, SortableJS, react-beautiful-dnd / hello-pangea, dnd-kit).
  const DRAG_SOURCE = "[draggable=true], [aria-grabbed], [aria-roledescription*=sortable i], [aria-roledescription*=draggable i], " +
    "[data-rbd-drag-handle-draggable-id], [data-rfd-drag-handle-draggable-id], [data-drag-handle], [data-sortable-id], " +
    ".ui-sortable-handle, .ui-draggable, .draggable, .sortable-item, .drag-handle, .ui-sortable > *, [data-sortable] > *"
  const DROP_ZONE = "[aria-dropeffect]:not([aria-dropeffect=none]), [data-droppable], [data-rbd-droppable-id], [data-rfd-droppable-id], " +
    "[ondrop], .ui-droppable, .ui-sortable, [data-sortable], [class*=dropzone i], [class*=drop-zone i], [class*=kanban-column i], [class*=kanban-lane i]"
  const GRAB = new Set(["grab", "-webkit-grab", "move", "grabbing", "-webkit-grabbing"])
  const zoneName = (el: Element): string => {
    const own = norm(el.getAttribute("aria-label") ?? "").trim() || (el.hasAttribute("aria-labelledby") ? byIds(el, "aria-labelledby") : "") ||
      norm(el.getAttribute("title") ?? "").trim()
    if (own) return own
    const heading = el.querySelector("h1, h2, h3, h4, h5, h6, [role=heading], legend, caption")
    return heading ? textOf(heading) : ""
  }

  // inside: true while walking the content of an interactive element (its text becomes its name)
  const walk = (node: Node, inside: boolean, parentPointer: boolean, textHidden: boolean): void => {
    if (node.nodeType === 3) {
      if (textHidden) return
      const s = norm(node.nodeValue ?? "")
      if (s.trim()) items.push({ k: "t", s })
      else if (s && items.length && items[items.length - 1]!.k === "t") items.push({ k: "t", s: " " })
      return
    }
    if (node.nodeType !== 1) return
    const el = node as Element
    const tag = el.tagName
    if (SKIP.has(tag)) return
    if (el.getAttribute("aria-hidden") === "true") return
    if (tag === "svg" || tag === "SVG" || el.namespaceURI === "http://www.w3.org/2000/svg") {
      if (inside) {
        const label = el.getAttribute("aria-label") ?? el.querySelector("title")?.textContent ?? ""
        if (label.trim()) items.push({ k: "t", s: " " + norm(label) + " " })
      }
      return
    }
    const style = getComputedStyle(el)
    const display = style.display
    if (display === "none" || style.contentVisibility === "hidden") return
    const hidden = style.visibility !== "visible"
    if (tag === "IMG") {
      if (inside && !hidden) {
        const alt = el.getAttribute("alt") ?? el.getAttribute("title") ?? ""
        if (alt.trim()) items.push({ k: "t", s: " " + norm(alt) + " " })
      }
      return
    }
    if (tag === "BR") {
      items.push({ k: "t", s: " " })
      return
    }
    if (tag === "IFRAME" || tag === "FRAME") {
      const r = el.getBoundingClientRect()
      if (hidden || r.width < 2 || r.height < 2) return
      let n = state.frames.get(el)
      if (n === undefined) {
        n = state.nextFrame++
        state.frames.set(el, n)
      }
      items.push({ k: "b" }, { k: "t", s: "\u0001" + n }, { k: "b" })
      return
    }

    // A concealed checkbox or radio is operated through its label (below), which carries its ref.
    if (isToggle(el) && concealed(el) && labelShown(el)) return
    const labelled = tag === "LABEL" ? (el as HTMLLabelElement).control : null
    const control = labelled !== null && isToggle(labelled) && concealed(labelled) ? labelled : undefined

    const pointer = style.cursor === "pointer"
    const grab = GRAB.has(style.cursor) && (el.parentElement === null || getComputedStyle(el.parentElement).cursor !== style.cursor)
    const dragSource = !hidden && !inside && (grab || el.matches(DRAG_SOURCE))
    let role = control ? control.type : roleOf(el)
    const explicitWidget = role !== undefined && WIDGET_ROLES.has(role)
    const editable = (el as HTMLElement).isContentEditable && !(el.parentElement?.isContentEditable ?? false)
    let interactive = !hidden && (
      (role !== undefined && (WIDGET_ROLES.has(role) || role === "file")) || editable || tag === "SUMMARY" || control !== undefined
    )
    if (interactive && role === "gridcell" && !pointer) interactive = false
    if (!interactive && editable) role = "textbox"
    // Clickable by heuristic: a pointer cursor that starts here (not inherited), or an onclick attribute.
    let heuristic = false
    // An icon-only control (a div or span with aria-label or title) is named by that attribute.
    const ownLabel = norm(el.getAttribute("aria-label") ?? el.getAttribute("title") ?? "").trim()
    if (!interactive && !inside && !hidden && tag !== "LABEL" && tag !== "BODY" && tag !== "HTML" &&
      ((pointer && (!parentPointer || ownLabel !== "")) || el.hasAttribute("onclick"))) {
      interactive = true
      heuristic = true
      role = "clickable"
    }
    if (dragSource && (!interactive || heuristic)) {
      interactive = true
      heuristic = false
      role = "draggable"
    }
    if (editable && !explicitWidget) {
      interactive = !hidden
      role = "textbox"
    }

    const block = !INLINE.has(display) && display !== "contents"
    const cell = display === "table-cell"
    const landmark = LANDMARKS[tag] ?? LANDMARK_ROLES[el.getAttribute("role") ?? ""]
    const headingLevel = /^H[1-6]$/.test(tag)
      ? Number(tag[1])
      : el.getAttribute("role") === "heading" ? Number(el.getAttribute("aria-level") ?? 2) : 0

    if (cell) items.push({ k: "sep" })
    else if (block) items.push({ k: "b" })

    let containerStart = -1
    const dropZone = !inside && !interactive && !hidden && el.matches(DROP_ZONE)
    if (dropZone) {
      const name = zoneName(el)
      containerStart = items.length
      items.push({ k: "in", head: `dropzone${name ? " " + quote(cut(name, nameBudget)) : ""} [${refOf(el)}]:` })
    } else if (landmark && !inside && !interactive) {
      let name = ""
      if (landmark === "dialog" || landmark === "form" || landmark === "nav" || landmark === "alert") {
        name = norm(el.getAttribute("aria-label") ?? "").trim() || (el.hasAttribute("aria-labelledby") ? byIds(el, "aria-labelledby") : "")
      }
      containerStart = items.length
      items.push({ k: "in", head: name ? `${landmark} ${quote(cut(name, nameBudget))}:` : `${landmark}:` })
    }
    if (headingLevel && !inside) items.push({ k: "h", level: headingLevel })

    const start = items.length
    let kids = childrenOf(el)
    // A closed <details> shows only its summary (its first <summary> child): the rest is not
    // rendered, and not operable, until the summary is clicked. Without a summary of its own the
    // browser draws "Details", which a click on the element's box (that line) opens.
    if (tag === "DETAILS") {
      const open = (el as HTMLDetailsElement).open
      const summary = Array.from(el.children).find((c) => c.tagName === "SUMMARY")
      if (summary === undefined && !hidden && !inside) {
        items.push({ k: "e", s: `button "Details" [${refOf(el)}] ${open ? "expanded" : "collapsed"}`, name: "Details" }, { k: "b" })
      }
      if (!open) kids = summary === undefined ? [] : [summary]
    }
    for (let i = 0; i < kids.length; i++) walk(kids[i]!, inside || interactive, pointer, hidden)

    if (interactive) {
      const slice = items.slice(start)
      const nested = slice.some((it) => it.k === "e")
      if (heuristic && nested) {
        // A pointer-cursor wrapper around real controls: the controls are the targets.
      } else if (heuristic && ownLabel === "" && !slice.some((it) => it.k === "t" && it.s.trim())) {
        // A pointer-cursor element with no content of its own: usually an overlay or a spacer.
        items.length = start
      } else if (nested) {
        const text = role === "textbox" ? "" : ""
        items.splice(start, 0, { k: "b" }, { k: "in", head: `${role} ${quote(nameOf(control ?? el, role!, text))} [${refOf(el)}]${statesOf(control ?? el, role!)}${dragSource && role !== "draggable" ? " draggable" : ""}:`.replace(' "" ', " ") })
        items.push({ k: "out" })
      } else {
        const text = slice.map((it) => (it.k === "t" ? it.s : it.k === "sep" ? " " : "")).join("")
        items.length = start
        const name = nameOf(control ?? el, role!, norm(text).trim())
        let token = `${role}${name ? " " + quote(name) : ""} [${refOf(el)}]${statesOf(control ?? el, role!)}`
        if (!name && tag === "A") {
          const href = el.getAttribute("href") ?? ""
          token += ` ->${cut(href.replace(/^https?:\/\/[^/]+/, ""), 40)}`
        }
        if (dragSource && role !== "draggable") token += " draggable"
        if (dragSource && !name && el.parentElement) {
          // A bare handle (a slider's thumb): where it sits on its track, to drag it by an offset.
          const r = el.getBoundingClientRect()
          const track = el.parentElement.getBoundingClientRect()
          if (track.width >= 3 * r.width) token += ` track=${Math.round(track.width)}px at=${Math.round(r.left + r.width / 2 - track.left)}px`
          else if (track.height >= 3 * r.height) token += ` track=${Math.round(track.height)}px at=${Math.round(r.top + r.height / 2 - track.top)}px`
        }
        items.push({ k: "e", s: token, name })
      }
    }

    if (containerStart >= 0 && dropZone) items.push({ k: "out" })
    else if (containerStart >= 0) {
      const hasContent = items.slice(containerStart + 1).some((it) => (it.k === "t" && it.s.trim()) || it.k === "e")
      if (hasContent) items.push({ k: "out" })
      else items.length = containerStart
    }
    if (headingLevel && !inside) items.push({ k: "b" })
    else if (block && !cell) items.push({ k: "b" })
  }

  const root = document.body ?? document.documentElement
  if (root) walk(root, false, false, false)

  // Render items into lines.
  const lines: Array<string> = []
  let indent = 0
  let parts: Array<Item> = []
  let heading = 0
  const flush = () => {
    if (!parts.length) {
      heading = 0
      return
    }
    // Drop text that merely repeats the name of a neighbouring element (labels, link captions).
    const names = new Set(parts.filter((p) => p.k === "e").map((p) => (p as { name: string }).name.toLowerCase()).filter(Boolean))
    let budget = heading ? textBudget + 40 : textBudget
    let out = ""
    let cutDone = false
    let pendingSep = false
    for (const p of parts) {
      if (p.k === "sep") {
        pendingSep = out.trim() !== ""
        continue
      }
      if (p.k === "t") {
        const t = p.s
        if (names.size && names.has(t.trim().toLowerCase())) continue
        if (budget <= 0) {
          if (!cutDone && t.trim()) {
            out = out.trimEnd() + "…"
            cutDone = true
          }
          continue
        }
        if (pendingSep && t.trim()) {
          out = out.trimEnd() + " | "
          pendingSep = false
        }
        const piece = t.length > budget ? t.slice(0, budget).trimEnd() + "…" : t
        if (t.length > budget) cutDone = true
        budget -= t.length
        out += piece
      } else if (p.k === "e") {
        if (pendingSep) {
          out = out.trimEnd() + " | "
          pendingSep = false
        }
        out += (out && !out.endsWith(" ") ? " " : "") + p.s + " "
        cutDone = false
      }
    }
    const text = out.replace(/ {2,}/g, " ").trim()
    if (text) lines.push(" ".repeat(indent) + (heading ? "#".repeat(heading) + " " : "") + text)
    parts = []
    heading = 0
  }
  for (const it of items) {
    if (it.k === "b") flush()
    else if (it.k === "in") {
      flush()
      lines.push(" ".repeat(indent) + it.head)
      indent++
    } else if (it.k === "out") {
      flush()
      indent = Math.max(0, indent - 1)
    } else if (it.k === "h") {
      flush()
      heading = it.level
    } else if (it.k === "t" && it.s.startsWith("\u0001")) {
      flush()
      lines.push(" ".repeat(indent) + it.s)
    } else parts.push(it)
  }
  flush()
  const scroller = document.scrollingElement ?? document.documentElement
  return {
    text: lines.join("\n"),
    refs: refCount,
    scrollY: Math.round(window.scrollY),
    scrollMax: Math.max(0, Math.round((scroller?.scrollHeight ?? 0) - window.innerHeight))
  }
}

/** Resolves a ref number of this frame to its element (null when gone or detached). */
export function elementForRef(id: number): Element | null {
  const st = (window as unknown as Record<symbol, { els: Map<number, WeakRef<Element>> } | undefined>)[Symbol.for("web-agent-service.refs")]
  const el = st?.els.get(id)?.deref()
  return el !== undefined && el.isConnected ? el : null
}

/** The iframe element numbered n by the last snapshot of this frame. */
export function iframeForNumber(n: number): Element | null {
  const st = (window as unknown as Record<symbol, { frames: WeakMap<Element, number> } | undefined>)[Symbol.for("web-agent-service.refs")]
  if (st === undefined) return null
  const search = (root: Document | ShadowRoot): Element | null => {
    for (const el of Array.from(root.querySelectorAll("*"))) {
      if ((el.tagName === "IFRAME" || el.tagName === "FRAME") && st.frames.get(el) === n) return el
      if (el.shadowRoot) {
        const found = search(el.shadowRoot)
        if (found) return found
      }
    }
    return null
  }
  return search(document)
}

/** The number the last snapshot gave this iframe element (evaluated on the element's handle). */
export function numberOfIframe(el: Element): number | null {
  const st = (window as unknown as Record<symbol, { frames: WeakMap<Element, number> } | undefined>)[Symbol.for("web-agent-service.refs")]
  return st?.frames.get(el) ?? null
}

/**
 * Coverage audit for the benchmark: visible interactive elements of this frame (composed
 * tree, outside aria-hidden subtrees) and how many of them carry a ref.
 */
export function auditRefs(): { visible: number; withRef: number; ariaHidden: number; missing: Array<string> } {
  const st = (window as unknown as Record<symbol, { ids: WeakMap<Element, number> } | undefined>)[Symbol.for("web-agent-service.refs")]
  const selector = "a[href], button, input:not([type=hidden]), select, textarea, summary, [contenteditable=''], [contenteditable=true], " +
    "[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=switch], [role=textbox], " +
    "[role=combobox], [role=searchbox], [role=slider], [role=option]"
  let visible = 0
  let withRef = 0
  let ariaHidden = 0
  const missing: Array<string> = []
  const visit = (root: Document | ShadowRoot) => {
    for (const el of Array.from(root.querySelectorAll(selector))) {
      const r = el.getBoundingClientRect()
      if (!el.checkVisibility({ visibilityProperty: true }) || r.width * r.height <= 0) continue
      if (el.closest("[aria-hidden=true]")) {
        ariaHidden++
        continue
      }
      visible++
      // A concealed checkbox or radio is operated through its label's ref.
      if (st?.ids.has(el) || Array.from((el as HTMLInputElement).labels ?? []).some((l) => st?.ids.has(l))) withRef++
      else if (missing.length < 5) missing.push(el.outerHTML.slice(0, 120))
    }
    for (const el of Array.from(root.querySelectorAll("*"))) if (el.shadowRoot) visit(el.shadowRoot)
  }
  visit(document)
  return { visible, withRef, ariaHidden, missing }
}

/**
 * Installed in every document of an agent's context before the page's scripts (init script):
 * keeps the time of the last DOM mutation, and the short timers (≤ 1 s) the page set in reaction
 * to events (an input's debounce before its suggestions, a click's delayed update), so the
 * settle after an action waits for them. Timers set by a running timer that is itself untracked
 * (polling, carousels) are not tracked: they are the page's own rhythm, not a reaction.
 */
export function installSettleTracker(): void {
  const KEY = Symbol.for("web-agent-service.settle")
  const w = window as unknown as Record<symbol, unknown>
  if (w[KEY] !== undefined) return
  const state = { timers: new Map<number, { due: number; created: number }>(), lastMutation: performance.now(), inTimer: false, inTracked: false }
  Object.defineProperty(window, KEY, { value: state, enumerable: false, configurable: true })
  const run = (fn: (...a: Array<unknown>) => unknown, self: unknown, args: Array<unknown>, tracked: boolean) => {
    const before = [state.inTimer, state.inTracked] as const
    state.inTimer = true
    state.inTracked = tracked
    try {
      return fn.apply(self, args)
    } finally {
      state.inTimer = before[0]
      state.inTracked = before[1]
    }
  }
  window.setTimeout = new Proxy(window.setTimeout, {
    apply(target, self, args: Array<unknown>) {
      const fn = args[0]
      if (typeof fn !== "function") return Reflect.apply(target, self, args)
      const ms = Number(args[1]) || 0
      const tracked = ms <= 1_000 && (!state.inTimer || state.inTracked)
      let id = 0
      const wrapped = function(this: unknown, ...a: Array<unknown>) {
        if (tracked) state.timers.delete(id)
        return run(fn as (...a: Array<unknown>) => unknown, this, a, tracked)
      }
      id = Reflect.apply(target, self, [wrapped, ...args.slice(1)]) as number
      if (tracked) state.timers.set(id, { due: performance.now() + ms, created: performance.now() })
      return id
    }
  })
  window.clearTimeout = new Proxy(window.clearTimeout, {
    apply(target, self, args: Array<unknown>) {
      state.timers.delete(Number(args[0]))
      return Reflect.apply(target, self, args)
    }
  })
  new MutationObserver(() => {
    state.lastMutation = performance.now()
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true })
}

/**
 * What the settle after an action waits for (see installSettleTracker): tracked timers set since
 * `since` that fire by `horizon`, how many of those were set by `actionEnded` (by the action
 * itself, not by the page's later reaction), and the milliseconds since the DOM last changed.
 * The three moments are wall-clock times (Date.now(), the same clock in the service and the
 * page), not durations measured when the call was made: on a busy host the call reaches the page
 * hundreds of ms later, and a window measured back from then missed the action's own timer (the
 * settle ended before a debounce fired). `tracked` is false in a document that was loaded before
 * the tracker was installed.
 */
export function settleState(args: { since: number; horizon: number; actionEnded: number }): {
  tracked: boolean
  pending: number
  pendingFromAction: number
  quietMs: number
} {
  const state = (window as unknown as Record<symbol, { timers: Map<number, { due: number; created: number }>; lastMutation: number } | undefined>)[
    Symbol.for("web-agent-service.settle")
  ]
  if (state === undefined) return { tracked: false, pending: 0, pendingFromAction: 0, quietMs: 0 }
  const now = performance.now()
  // The wall-clock moments on the page's performance timeline.
  const wallNow = Date.now()
  const since = now - (wallNow - args.since)
  const horizon = now + (args.horizon - wallNow)
  const actionEnded = now - (wallNow - args.actionEnded)
  let pending = 0
  let pendingFromAction = 0
  for (const timer of state.timers.values()) {
    if (timer.created >= since && timer.due <= horizon) {
      pending++
      if (timer.created <= actionEnded) pendingFromAction++
    }
  }
  return { tracked: true, pending, pendingFromAction, quietMs: Math.round(now - state.lastMutation) }
}

/**
 * Before `type` replaces a field's text, by ref number in the element's frame (a frame evaluate:
 * an element handle's first evaluate in a document costs Playwright ~100 ms): a visible, enabled,
 * writable text input or textarea is focused with its text selected ("ready": the caller inserts
 * the new text over the selection, which is what Playwright's fill does, without building
 * Playwright's injected script in the document, 100–200 ms on a new page); "editable" for any
 * other editable element (contenteditable, inputs of other types), "other" otherwise, "gone" when
 * the ref has no element. Self-contained: it reads the ref table the snapshot keeps.
 */
export function focusRefForTyping(id: number): "ready" | "editable" | "other" | "gone" {
  const table = (window as unknown as Record<symbol, { els: Map<number, WeakRef<Element>> } | undefined>)[Symbol.for("web-agent-service.refs")]
  const el = table?.els.get(id)?.deref()
  if (el === undefined || !el.isConnected) return "gone"
  const textTypes = ["", "text", "search", "email", "url", "tel", "password"]
  const field = el instanceof HTMLInputElement && textTypes.includes(el.type)
    ? el
    : el instanceof HTMLTextAreaElement
    ? el
    : undefined
  if (field === undefined) {
    return el instanceof HTMLInputElement || (el as HTMLElement).isContentEditable ? "editable" : "other"
  }
  const box = field.getBoundingClientRect()
  const style = getComputedStyle(field)
  if (field.disabled || field.readOnly || box.width === 0 || box.height === 0 || style.visibility !== "visible") return "editable"
  field.focus()
  const root = field.getRootNode() as Document | ShadowRoot
  if (root.activeElement !== field) return "editable"
  field.select()
  return "ready"
}

/** The value of the text field of a ref (undefined when it has none): `type` waits until its inserted text is in. */
export function valueOfRef(id: number): string | undefined {
  const table = (window as unknown as Record<symbol, { els: Map<number, WeakRef<Element>> } | undefined>)[Symbol.for("web-agent-service.refs")]
  const el = table?.els.get(id)?.deref()
  return el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement ? el.value : undefined
}

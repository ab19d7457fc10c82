/**
 * The fixture sites of the evaluation suite (`wa eval`, src/eval/): plain node:http on loopback,
 * no external resources, shipped with the project so anyone can run the suite against their model.
 *
 * Every task lives under /t/<task>/... and is checked by the site itself: a page reveals its
 * success code ("Success code: WA-…") only when the interaction truly worked — the page's own
 * script saw the real state change (the input toggled, the drop handled, the value set) and asked
 * the server for the code (POST /t/<task>/__code), or the server checked a submitted form. The codes
 * are HMACs of the task name under a secret drawn per start, so they cannot be guessed, and the
 * server records which tasks were solved (`solved`).
 *
 * A second listener on another port serves the same pages from another origin (cross-origin iframes).
 *
 * This module imports nothing of the server: the eval runs on the client side of the API.
 */
import { createHmac, randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { widgetPages } from "./widgets.ts"

export interface EvalSite {
  /** Base URL without trailing slash, e.g. http://127.0.0.1:39123 */
  readonly url: string
  /** The same pages on another origin (another port). */
  readonly crossUrl: string
  /** The success code a task's page reveals when it is solved. */
  readonly codeOf: (task: string) => string
  /** Tasks whose page revealed its code (in the order they did). */
  readonly solved: ReadonlySet<string>
  /** The one-time code the 2FA login asks for (the person running the eval "receives" it). */
  readonly oneTimeCode: string
  /** The content of the file the upload task expects (the eval puts it into the workspace). */
  readonly uploadContent: string
  readonly close: () => Promise<void>
}

export interface SiteOptions {
  /** Host the listeners bind to (default 127.0.0.1). */
  readonly host?: string
  /** Host used in the URLs given to the agent (default: the bound host); e.g. host.docker.internal. */
  readonly publicHost?: string
  readonly port?: number
}

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** A task page: `win()` asks the server for the code and shows it in the status line. */
const page = (task: string, title: string, body: string, script = ""): string =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title>` +
  `<style>body{font:15px sans-serif;margin:20px}</style></head><body>${body}` +
  `<p id="code" role="status"></p>` +
  `<script>let won=false;async function win(){if(won)return;won=true;const r=await fetch(${JSON.stringify(`/t/${task}/__code`)},{method:"POST"});` +
  `document.getElementById("code").textContent="Success code: "+(await r.text())}</script>` +
  (script === "" ? "" : `<script>${script}</script>`) +
  `</body></html>`

/** A widget page of widgets.ts as a task: it wins when its state line reads as expected. */
const widgetTask = (task: string, widget: string, expected: RegExp): string => {
  const source = widgetPages[widget]!
  const watcher = `<p id="code" role="status"></p><script>let won=false;async function win(){if(won)return;won=true;` +
    `const r=await fetch(${JSON.stringify(`/t/${task}/__code`)},{method:"POST"});document.getElementById("code").textContent="Success code: "+(await r.text())}` +
    `const check=()=>{const s=document.getElementById("state");if(s&&${expected.toString()}.test(s.textContent))win()};` +
    `new MutationObserver(check).observe(document.body,{subtree:true,childList:true,characterData:true})</script>`
  return source.replace("</body>", `${watcher}</body>`)
}

/** Static task pages, by path. */
const staticPages = (cross: string): Record<string, string> => ({
  // ---- labels standing for hidden inputs
  "/t/hidden-radio-tiles": widgetTask("hidden-radio-tiles", "/widgets/tiles", /^Plan: pro; billing: monthly$/),
  "/t/btn-check": widgetTask("btn-check", "/widgets/btn-check", /^Toppings: olives, basil; size: large$/),
  "/t/star-rating": page(
    "star-rating",
    "Rate your stay",
    `<style>.stars label{font-size:28px;cursor:pointer;color:#aaa}.stars input{position:absolute;opacity:0;width:0;height:0}</style>
<h1>Rate your stay</h1><div class="stars">
${[1, 2, 3, 4, 5].map((n) => `<label title="${n} stars"><input type="radio" name="rating" value="${n}" aria-label="${n} stars">★</label>`).join("")}
</div><p id="state">Rating: none</p>`,
    `for(const i of document.querySelectorAll("input"))i.addEventListener("change",()=>{document.getElementById("state").textContent="Rating: "+i.value;if(i.value==="4")win()})`
  ),
  "/t/terms-checkbox": page(
    "terms-checkbox",
    "Sign up",
    `<style>.check input{display:none}.check .box{display:inline-block;width:16px;height:16px;border:2px solid #333;margin-right:6px}.check input:checked+.box{background:#06c}</style>
<h1>Create your account</h1><label class="check"><input type="checkbox" id="terms"><span class="box"></span>I agree to the terms of service</label>
<p><button id="go">Continue</button></p><p id="state"></p>`,
    `document.getElementById("go").onclick=()=>{if(document.getElementById("terms").checked)win();else document.getElementById("state").textContent="Please accept the terms first"}`
  ),
  // ---- icon-only controls
  "/t/icon-title": widgetTask("icon-title", "/widgets/icons", /Favourite: yes; deleted: no/),
  "/t/icon-aria": page(
    "icon-aria",
    "Inbox",
    `<style>.icon{display:inline-block;width:22px;height:22px;margin:4px;cursor:pointer;background:#789;border-radius:4px}</style>
<h1>Inbox</h1><div class="msg">Quarterly report from Dana <div class="icon" aria-label="Archive message"></div><div class="icon" aria-label="Mark as spam"></div></div>
<p id="state">Not archived</p>`,
    `document.querySelector("[aria-label='Archive message']").onclick=()=>{document.getElementById("state").textContent="Archived";win()}
document.querySelector("[aria-label='Mark as spam']").onclick=()=>{won=true;document.getElementById("state").textContent="Marked as spam"}`
  ),
  "/t/stepper": page(
    "stepper",
    "Cart",
    `<style>.i{display:inline-block;width:24px;height:24px;text-align:center;cursor:pointer;border:1px solid #999}</style>
<h1>Green tea</h1><div><span class="i" aria-label="Decrease quantity"></span> <span id="qty">1</span> <span class="i" aria-label="Increase quantity"></span></div>
<p><button id="add">Add to cart</button></p><p id="state"></p>`,
    `let q=1;const show=()=>document.getElementById("qty").textContent=q
document.querySelector("[aria-label='Increase quantity']").onclick=()=>{q++;show()}
document.querySelector("[aria-label='Decrease quantity']").onclick=()=>{q=Math.max(0,q-1);show()}
document.getElementById("add").onclick=()=>{document.getElementById("state").textContent="Added "+q;if(q===3)win()}`
  ),
  // ---- drag and drop, sliders
  "/t/sortable": widgetTask("sortable", "/widgets/sortable", /^Order: Deploy > /),
  "/t/kanban": widgetTask("kanban", "/widgets/kanban", /Done: Fix login bug$/),
  "/t/div-slider": widgetTask("div-slider", "/widgets/slider", /^Volume: (7[5-9]|8[0-5])$/),
  "/t/range-slider": page(
    "range-slider",
    "Display",
    `<h1>Display settings</h1><label>Brightness <input type="range" id="b" min="0" max="10" step="1" value="2"></label><p id="state">Brightness: 2</p>`,
    `const b=document.getElementById("b");b.addEventListener("input",()=>{document.getElementById("state").textContent="Brightness: "+b.value;if(b.value==="7")win()})`
  ),
  // ---- selects, menus
  "/t/native-select": page(
    "native-select",
    "Shipping address",
    `<h1>Shipping address</h1><label>Country <select id="c"><option value="">Choose…</option><option value="de">Germany</option><option value="ca">Canada</option><option value="jp">Japan</option></select></label>`,
    `document.getElementById("c").addEventListener("change",(e)=>{if(e.target.value==="ca")win()})`
  ),
  "/t/aria-select": page(
    "aria-select",
    "Delivery",
    `<style>[role=listbox]{border:1px solid #999;padding:0;margin:0;width:220px}[role=option]{list-style:none;padding:6px;cursor:pointer}[role=option]:hover{background:#eef}</style>
<h1>Delivery</h1><span id="lbl">Delivery speed</span>
<button id="trigger" aria-haspopup="listbox" aria-expanded="false" aria-labelledby="lbl trigger">Standard</button>
<ul role="listbox" id="opts" aria-labelledby="lbl" hidden><li role="option" aria-selected="true">Standard</li><li role="option" aria-selected="false">Express</li><li role="option" aria-selected="false">Overnight</li></ul>`,
    `const t=document.getElementById("trigger"),l=document.getElementById("opts")
t.onclick=()=>{l.hidden=!l.hidden;t.setAttribute("aria-expanded",String(!l.hidden))}
for(const o of l.children)o.onclick=()=>{for(const x of l.children)x.setAttribute("aria-selected",String(x===o));t.textContent=o.textContent;l.hidden=true;t.setAttribute("aria-expanded","false");if(o.textContent==="Express")win()}`
  ),
  "/t/div-menu": page(
    "div-menu",
    "Files",
    `<style>.trigger,.item{cursor:pointer;padding:4px 8px}.menu{border:1px solid #999;width:160px;display:none}.menu.open{display:block}</style>
<h1>Files</h1><div>budget.xlsx <div class="trigger" id="t">Actions ▾</div><div class="menu" id="m"><div class="item">Rename</div><div class="item">Duplicate</div><div class="item">Delete</div></div></div>
<p id="state">Files: budget.xlsx</p>`,
    `document.getElementById("t").onclick=()=>document.getElementById("m").classList.toggle("open")
for(const i of document.querySelectorAll(".item"))i.onclick=()=>{document.getElementById("m").classList.remove("open");if(i.textContent==="Duplicate"){document.getElementById("state").textContent="Files: budget.xlsx, budget (copy).xlsx";win()}else{won=true}}`
  ),
  "/t/hover-menu": page(
    "hover-menu",
    "Shop",
    `<style>nav .top{display:inline-block;position:relative;padding:8px;cursor:default}nav .sub{display:none;position:absolute;top:30px;left:0;background:#fff;border:1px solid #999;width:160px}
nav .top:hover .sub{display:block}nav .sub a{display:block;padding:6px}nav .top>button{border:0;background:none;font:inherit}</style>
<nav><div class="top"><button type="button" aria-haspopup="true">Products</button><div class="sub"><a href="#" id="laptops">Laptops</a><a href="#" id="phones">Phones</a></div></div><div class="top"><a href="#">About</a></div></nav>
<h1>Welcome</h1><p id="state">Category: none</p>`,
    `document.getElementById("phones").onclick=(e)=>{e.preventDefault();document.getElementById("state").textContent="Category: phones";win()}
document.getElementById("laptops").onclick=(e)=>{e.preventDefault();won=true}`
  ),
  "/t/autocomplete": widgetTask("autocomplete", "/widgets/autocomplete", /^Destination: Bergen$/),
  "/t/datepicker": page(
    "datepicker",
    "Book a room",
    `<style>#cal{border:1px solid #999;padding:8px;width:260px}#cal button.day{width:32px}</style>
<h1>Book a room</h1><label>Check-in <input id="d" readonly placeholder="Select a date"></label><div id="cal" hidden></div>`,
    `const d=document.getElementById("d"),cal=document.getElementById("cal");let y=2026,m=2
const names=["January","February","March","April","May","June","July","August","September","October","November","December"]
const render=()=>{cal.innerHTML="";const h=document.createElement("div");const prev=document.createElement("button");prev.setAttribute("aria-label","Previous month");prev.textContent="‹"
const next=document.createElement("button");next.setAttribute("aria-label","Next month");next.textContent="›";const t=document.createElement("b");t.textContent=" "+names[m]+" "+y+" "
prev.onclick=()=>{m--;if(m<0){m=11;y--}render()};next.onclick=()=>{m++;if(m>11){m=0;y++}render()};h.append(prev,t,next);cal.append(h)
const days=new Date(y,m+1,0).getDate();for(let i=1;i<=days;i++){const b=document.createElement("button");b.className="day";b.textContent=String(i);b.setAttribute("aria-label",names[m]+" "+i+", "+y)
b.onclick=()=>{d.value=y+"-"+String(m+1).padStart(2,"0")+"-"+String(i).padStart(2,"0");cal.hidden=true;if(d.value==="2026-04-14")win()};cal.append(b)}}
d.onclick=()=>{cal.hidden=false;render()}`
  ),
  "/t/date-input": page(
    "date-input",
    "Appointment",
    `<h1>Appointment</h1><label>Appointment date <input type="date" id="d"></label>`,
    `document.getElementById("d").addEventListener("change",(e)=>{if(e.target.value==="2026-05-01")win()})`
  ),
  // ---- text editing
  "/t/contenteditable": page(
    "contenteditable",
    "Notes",
    `<style>#ed{border:1px solid #999;min-height:60px;padding:6px}</style>
<h1>New note</h1><div id="ed" contenteditable="true" role="textbox" aria-label="Note body" aria-multiline="true"></div><p><button id="save">Save note</button></p><p id="state"></p>`,
    `document.getElementById("save").onclick=()=>{const t=document.getElementById("ed").innerText.trim();document.getElementById("state").textContent="Saved: "+t;if(t==="Buy oat milk")win()}`
  ),
  // ---- shadow DOM and iframes
  "/t/shadow-open": page(
    "shadow-open",
    "Checkout",
    `<h1>Checkout</h1><coupon-box></coupon-box>`,
    `customElements.define("coupon-box",class extends HTMLElement{connectedCallback(){const r=this.attachShadow({mode:"open"})
r.innerHTML='<label>Coupon <input id="c"></label> <button id="a">Apply coupon</button><p id="s"></p>'
r.getElementById("a").onclick=()=>{if(r.getElementById("c").value.trim()==="SAVE10"){r.getElementById("s").textContent="Coupon applied";win()}else r.getElementById("s").textContent="Invalid coupon"}}})`
  ),
  "/t/shadow-nested": page(
    "shadow-nested",
    "Order",
    `<h1>Your order</h1><order-panel></order-panel>`,
    `customElements.define("confirm-button",class extends HTMLElement{connectedCallback(){const r=this.attachShadow({mode:"open"});r.innerHTML='<button>Confirm order</button>';r.querySelector("button").onclick=()=>win()}})
customElements.define("order-panel",class extends HTMLElement{connectedCallback(){const r=this.attachShadow({mode:"open"});r.innerHTML='<section><h2>Summary</h2><p>1 × kettle</p><confirm-button></confirm-button></section>'}})`
  ),
  "/t/iframe-same": page(
    "iframe-same",
    "Newsletter",
    `<h1>Our newsletter</h1><iframe src="/t/iframe-same/inner" title="Subscribe form" width="420" height="160"></iframe>`
  ),
  "/t/iframe-same/inner": page(
    "iframe-same",
    "Subscribe",
    `<label>Email <input id="e" type="email"></label> <button id="s">Subscribe</button>`,
    `document.getElementById("s").onclick=()=>{if(document.getElementById("e").value.trim()==="eval@example.com")win()}`
  ),
  "/t/iframe-cross": page(
    "iframe-cross",
    "Payment",
    `<h1>Payment</h1><iframe src="${cross}/t/iframe-cross/inner" title="Card form" width="420" height="180"></iframe>`
  ),
  "/t/iframe-cross/inner": page(
    "iframe-cross",
    "Card",
    `<label><input type="checkbox" id="k"> Save this card</label><p><button id="p">Pay now</button></p>`,
    `document.getElementById("p").onclick=()=>{if(document.getElementById("k").checked)win()}`
  ),
  // ---- overlays, disclosure, tabs, switches, dialogs
  "/t/modal": page(
    "modal",
    "Profile",
    `<style>dialog{padding:20px}</style><h1>Profile</h1><button id="open">Edit profile</button>
<dialog id="dlg" aria-label="Edit profile"><label>Display name <input id="n"></label><p><button id="save">Save changes</button> <button id="cancel">Cancel</button></p></dialog>`,
    `const dlg=document.getElementById("dlg");document.getElementById("open").onclick=()=>dlg.showModal()
document.getElementById("cancel").onclick=()=>dlg.close();document.getElementById("save").onclick=()=>{dlg.close();if(document.getElementById("n").value.trim()==="Ada")win()}`
  ),
  "/t/cookie-wall": widgetTask("cookie-wall", "/widgets/cookie-wall", /^Cart: 1 blue mug$/),
  "/t/accordion": page(
    "accordion",
    "Help",
    `<h1>Help centre</h1><details><summary>Returns</summary><p>30 days.</p></details><details><summary>Shipping</summary><p>Ships in 2 days.</p><button id="track">Track my parcel</button></details>`,
    `document.getElementById("track").onclick=()=>win()`
  ),
  "/t/tabs": page(
    "tabs",
    "Settings",
    `<h1>Settings</h1><div role="tablist"><button role="tab" aria-selected="true" id="t1">General</button><button role="tab" aria-selected="false" id="t2">Billing</button></div>
<div role="tabpanel" id="p1">Language: English</div><div role="tabpanel" id="p2" hidden><button id="inv">Enable invoices</button></div>`,
    `const sel=(a,b,pa,pb)=>{a.setAttribute("aria-selected","true");b.setAttribute("aria-selected","false");pa.hidden=false;pb.hidden=true}
const t1=document.getElementById("t1"),t2=document.getElementById("t2"),p1=document.getElementById("p1"),p2=document.getElementById("p2")
t1.onclick=()=>sel(t1,t2,p1,p2);t2.onclick=()=>sel(t2,t1,p2,p1);document.getElementById("inv").onclick=()=>win()`
  ),
  "/t/switch": page(
    "switch",
    "Preferences",
    `<style>.sw{display:inline-block;width:40px;height:20px;border-radius:10px;background:#ccc;cursor:pointer;vertical-align:middle}.sw[aria-checked=true]{background:#06c}</style>
<h1>Preferences</h1><p><span id="l1">Email alerts</span> <div class="sw" role="switch" aria-checked="true" aria-labelledby="l1" tabindex="0"></div></p>
<p><span id="l2">Dark mode</span> <div class="sw" role="switch" aria-checked="false" aria-labelledby="l2" tabindex="0" id="dark"></div></p>`,
    `for(const s of document.querySelectorAll("[role=switch]"))s.onclick=()=>{s.setAttribute("aria-checked",String(s.getAttribute("aria-checked")!=="true"))
if(document.getElementById("dark").getAttribute("aria-checked")==="true"&&document.querySelector("[aria-labelledby=l1]").getAttribute("aria-checked")==="true")win()}`
  ),
  "/t/confirm-dialog": page(
    "confirm-dialog",
    "Drafts",
    `<h1>Drafts</h1><p>Old draft from May</p><button id="del">Delete draft</button><p id="state"></p>`,
    `document.getElementById("del").onclick=()=>{if(confirm("Delete this draft?")){document.getElementById("state").textContent="Draft deleted";win()}}`
  ),
  "/t/delayed-content": page(
    "delayed-content",
    "Reports",
    `<h1>Reports</h1><button id="load">Load report</button><div id="out"></div>`,
    `document.getElementById("load").onclick=()=>{document.getElementById("out").textContent="Loading…";setTimeout(()=>{document.getElementById("out").innerHTML='<p>Report ready.</p><button id="ok">Acknowledge report</button>';document.getElementById("ok").onclick=()=>win()},1500)}`
  ),
  // ---- lists, scrolling, tabs
  "/t/infinite-scroll": page(
    "infinite-scroll",
    "Feed",
    `<style>.post{height:120px;border-bottom:1px solid #ddd}</style><h1>Feed</h1><div id="feed"></div><p id="more">Loading more…</p>`,
    `let n=0;const feed=document.getElementById("feed")
const load=()=>{for(let i=0;i<10;i++){n++;const d=document.createElement("div");d.className="post";const k=n;d.innerHTML="<p>Post "+k+"</p>"
if(k===34){const b=document.createElement("button");b.textContent="Like post 34";b.onclick=()=>win();d.append(b)}feed.append(d)}if(n>=50)document.getElementById("more").remove()}
load();let busy=false;addEventListener("scroll",()=>{if(busy||n>=50)return;if(innerHeight+scrollY>=document.body.scrollHeight-200){busy=true;setTimeout(()=>{load();busy=false},200)}})`
  ),
  "/t/new-tab": page(
    "new-tab",
    "Invoices",
    `<h1>Invoices</h1><p><a href="/t/new-tab/invoice" target="_blank">Open invoice 7 in a new tab</a></p>`
  ),
  "/t/new-tab/invoice": page(
    "new-tab",
    "Invoice 7",
    `<h1>Invoice 7</h1><p>Amount due: 120 EUR</p><button id="pay">Mark as paid</button>`,
    `document.getElementById("pay").onclick=()=>{if(window.opener!==null||history.length>=1)win()}`
  ),
  "/t/popup": page(
    "popup",
    "Support",
    `<h1>Support</h1><button id="chat">Open chat window</button>`,
    `document.getElementById("chat").onclick=()=>window.open("/t/popup/chat","chat","width=400,height=500")`
  ),
  "/t/popup/chat": page(
    "popup",
    "Chat",
    `<h1>Chat with support</h1><button id="start">Start conversation</button>`,
    `document.getElementById("start").onclick=()=>{if(window.opener)win()}`
  ),
  // ---- tables
  "/t/table-action": page(
    "table-action",
    "Orders",
    `<h1>Orders</h1><table><thead><tr><th>Order</th><th>Customer</th><th>Total</th><th></th></tr></thead><tbody>
${[["1041", "Ines", "12.00"], ["1042", "Omar", "54.50"], ["1043", "Kai", "8.90"]].map(([o, c, t]) => `<tr><td>#${o}</td><td>${c}</td><td>${t}</td><td><button data-o="${o}">Approve</button></td></tr>`).join("")}
</tbody></table><p id="state"></p>`,
    `for(const b of document.querySelectorAll("button[data-o]"))b.onclick=()=>{b.disabled=true;document.getElementById("state").textContent="Approved #"+b.dataset.o;if(b.dataset.o==="1042")win();else won=true}`
  ),
  "/t/table-extract": page(
    "table-extract",
    "Stock",
    `<h1>Stock</h1><table><tr><th>Product</th><th>In stock</th></tr><tr><td>Red mug</td><td>14</td></tr><tr><td>Blue mug</td><td>27</td></tr><tr><td>Green mug</td><td>3</td></tr></table>
<p><label>Units of Blue mug <input id="a" inputmode="numeric"></label> <button id="check">Check answer</button></p><p id="state"></p>`,
    `document.getElementById("check").onclick=()=>{if(document.getElementById("a").value.trim()==="27")win();else document.getElementById("state").textContent="Wrong"}`
  ),
  // ---- vision: a button drawn on a <canvas> (no DOM control, no ref), somewhere else at each load;
  // only a click inside it reveals the code, a click elsewhere says where it missed.
  "/t/canvas-button": page(
    "canvas-button",
    "Unlock",
    `<h1>Unlock your voucher</h1><p>Press the magenta Reveal button drawn on the panel below.</p>
<canvas id="c" width="640" height="300" style="display:block;border:1px solid #ccc"></canvas><p id="state">Not pressed yet.</p>`,
    `const c=document.getElementById("c"),g=c.getContext("2d"),W=140,H=48
const bx=20+Math.floor(Math.random()*(c.width-W-40)),by=20+Math.floor(Math.random()*(c.height-H-40))
g.fillStyle="#f4f4f4";g.fillRect(0,0,c.width,c.height);g.fillStyle="#ff00ff";g.fillRect(bx,by,W,H)
g.fillStyle="#ffffff";g.font="bold 22px sans-serif";g.fillText("Reveal",bx+36,by+32)
c.addEventListener("click",(e)=>{const r=c.getBoundingClientRect(),x=(e.clientX-r.left)*c.width/r.width,y=(e.clientY-r.top)*c.height/r.height
if(x>=bx&&x<=bx+W&&y>=by&&y<=by+H){document.getElementById("state").textContent="Pressed.";win()}
else document.getElementById("state").textContent="Missed at ("+Math.round(x)+", "+Math.round(y)+")."})`
  )
})

const formPage = (title: string, body: string): string =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head><body>${body}</body></html>`

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

const formFields = async (req: IncomingMessage, url: URL): Promise<URLSearchParams> =>
  req.method === "POST" ? new URLSearchParams((await readBody(req)).toString("utf8")) : url.searchParams

/** The file parts of a multipart/form-data body. */
const multipartFiles = (body: Buffer, contentType: string): Array<{ filename: string; data: Buffer }> => {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType)
  if (boundary === null) return []
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`)
  const files: Array<{ filename: string; data: Buffer }> = []
  let at = body.indexOf(delimiter)
  while (at !== -1) {
    const start = at + delimiter.length + 2
    const next = body.indexOf(delimiter, start)
    if (next === -1) break
    const part = body.subarray(start, next - 2)
    const headerEnd = part.indexOf("\r\n\r\n")
    const filename = /filename="([^"]*)"/.exec(part.subarray(0, headerEnd).toString("utf8"))?.[1]
    if (filename !== undefined) files.push({ filename, data: part.subarray(headerEnd + 4) })
    at = next
  }
  return files
}

const products = ["Amber vase", "Brass hook", "Cedar box", "Denim bag", "Elm stool", "Fern print", "Glass jar", "Hemp rug", "Iron pan", "Jute mat",
  "Kraft pad", "Linen towel", "Maple tray", "Nickel lamp", "Oak shelf", "Pine crate", "Quartz clock", "Rattan chair", "Slate board", "Teal lamp",
  "Umber mug", "Velvet cushion", "Wool throw"]

const catalogue = [
  { id: "p1", name: "Acme Widget Mini", price: "9.90" },
  { id: "p2", name: "Acme Widget Pro", price: "49.00" },
  { id: "p3", name: "Acme Gadget", price: "19.00" },
  { id: "p4", name: "Widget Stand", price: "5.50" }
]

export const startEvalSite = async (options: SiteOptions = {}): Promise<EvalSite> => {
  const secret = randomBytes(16)
  const codeOf = (task: string) => `WA-${createHmac("sha256", secret).update(task).digest("hex").slice(0, 10).toUpperCase()}`
  const oneTimeCode = String(100000 + (randomBytes(4).readUInt32BE(0) % 900000))
  const uploadContent = `invoice ${randomBytes(6).toString("hex")}\n`
  const solved = new Set<string>()
  const sessions = new Map<string, "password" | "verified">()
  const host = options.host ?? "127.0.0.1"
  const publicHost = options.publicHost ?? host
  let url = ""
  let crossUrl = ""
  let pages: Record<string, string> = {}

  const send = (res: ServerResponse, body: string, status = 200, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...headers })
    res.end(body)
  }
  const reveal = (task: string) => {
    solved.add(task)
    return `<p id="code" role="status">Success code: ${codeOf(task)}</p>`
  }
  const cookie = (req: IncomingMessage, name: string) =>
    (req.headers.cookie ?? "").split(";").map((p) => p.trim().split("=")).find(([k]) => k === name)?.[1]

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const u = new URL(req.url ?? "/", "http://site")
    const path = u.pathname.replace(/\/+$/, "") || "/"
    const codeRequest = /^\/t\/([a-z0-9-]+)\/__code$/.exec(path)
    if (codeRequest !== null && req.method === "POST") {
      solved.add(codeRequest[1]!)
      res.writeHead(200, { "content-type": "text/plain", "cache-control": "no-store", "access-control-allow-origin": "*" })
      return void res.end(codeOf(codeRequest[1]!))
    }
    switch (path) {
      case "/": {
        const links = Object.keys(pages).filter((p) => p.split("/").length === 3).map((p) => `<li><a href="${p}">${p.slice(3)}</a></li>`)
        return send(res, formPage("Eval tasks", `<h1>Eval tasks</h1><ul>${links.join("")}</ul>`))
      }
      // ---- a plain form checked by the server
      case "/t/contact-form": {
        if (req.method === "POST") {
          const f = await formFields(req, u)
          const ok = f.get("name") === "Grace Hopper" && f.get("email") === "grace@example.com" && f.get("topic") === "billing" && f.get("urgent") === "yes" &&
            (f.get("message") ?? "").trim() === "Please resend my invoice"
          return send(res, formPage("Sent", ok ? `<h1>Message sent</h1>${reveal("contact-form")}` : `<h1>Not quite</h1><p>Some fields are wrong.</p>`))
        }
        return send(res, formPage("Contact", `<h1>Contact us</h1><form method="post">
<p><label>Name <input name="name"></label></p><p><label>Email <input name="email" type="email"></label></p>
<p>Topic: <label><input type="radio" name="topic" value="sales"> Sales</label> <label><input type="radio" name="topic" value="billing"> Billing</label></p>
<p><label><input type="checkbox" name="urgent" value="yes"> Urgent</label></p>
<p><label>Message <textarea name="message"></textarea></label></p><button type="submit">Send message</button></form>`))
      }
      // ---- a multi-page form: each step posts to the next, carrying what was entered
      case "/t/wizard": {
        return send(res, formPage("Step 1 of 3", `<h1>Step 1 of 3: who</h1><form method="get" action="/t/wizard/2">
<p><label>Full name <input name="name"></label></p><button type="submit">Next</button></form>`))
      }
      case "/t/wizard/2": {
        const name = u.searchParams.get("name") ?? ""
        return send(res, formPage("Step 2 of 3", `<h1>Step 2 of 3: where</h1><form method="get" action="/t/wizard/3"><input type="hidden" name="name" value="${esc(name)}">
<p><label>City <select name="city"><option value="">Choose…</option><option>Lisbon</option><option>Porto</option><option>Faro</option></select></label></p>
<p><label>Postcode <input name="postcode"></label></p><button type="submit">Next</button></form>`))
      }
      case "/t/wizard/3": {
        const name = u.searchParams.get("name") ?? "", city = u.searchParams.get("city") ?? "", postcode = u.searchParams.get("postcode") ?? ""
        return send(res, formPage("Step 3 of 3", `<h1>Step 3 of 3: confirm</h1><p>${esc(name)}, ${esc(postcode)} ${esc(city)}</p><form method="post" action="/t/wizard/done">
<input type="hidden" name="name" value="${esc(name)}"><input type="hidden" name="city" value="${esc(city)}"><input type="hidden" name="postcode" value="${esc(postcode)}">
<p><label><input type="checkbox" name="confirm" value="yes"> The details are correct</label></p><button type="submit">Place order</button></form>`))
      }
      case "/t/wizard/done": {
        const f = await formFields(req, u)
        const ok = f.get("name") === "Ana Silva" && f.get("city") === "Porto" && f.get("postcode") === "4000-123" && f.get("confirm") === "yes"
        return send(res, formPage("Order", ok ? `<h1>Order placed</h1>${reveal("wizard")}` : `<h1>Order rejected</h1><p>The details were not right.</p>`))
      }
      // ---- search then extract
      case "/t/search-extract": {
        return send(res, formPage("Catalogue", `<h1>Catalogue</h1><form method="get" action="/t/search-extract/results" role="search">
<label>Search products <input name="q" type="search"></label> <button type="submit">Search</button></form>`))
      }
      case "/t/search-extract/results": {
        const q = (u.searchParams.get("q") ?? "").toLowerCase().trim()
        const hits = q === "" ? [] : catalogue.filter((p) => q.split(/\s+/).every((w) => p.name.toLowerCase().includes(w)))
        return send(res, formPage("Results", `<h1>Results for “${esc(q)}”</h1>${hits.length === 0 ? "<p>No products found.</p>" : `<ul>${hits.map((p) => `<li><a href="/t/search-extract/item/${p.id}">${esc(p.name)}</a> ${p.price} EUR</li>`).join("")}</ul>`}`))
      }
      // ---- login with a one-time code (the agent asks the person, through ask_human)
      case "/t/login-2fa": {
        if (req.method === "POST") {
          const f = await formFields(req, u)
          if (f.get("username") !== "eval" || f.get("password") !== "correct-horse") {
            return send(res, formPage("Sign in", `<h1>Sign in</h1><p>Wrong username or password.</p><p><a href="/t/login-2fa">Try again</a></p>`))
          }
          const sid = randomBytes(8).toString("hex")
          sessions.set(sid, "password")
          return send(res, "", 303, { location: "/t/login-2fa/verify", "set-cookie": `eval2fa=${sid}; Path=/; HttpOnly` })
        }
        return send(res, formPage("Sign in", `<h1>Sign in</h1><form method="post"><p><label>Username <input name="username"></label></p>
<p><label>Password <input name="password" type="password"></label></p><button type="submit">Sign in</button></form>`))
      }
      case "/t/login-2fa/verify": {
        const sid = cookie(req, "eval2fa")
        if (sid === undefined || !sessions.has(sid)) return send(res, "", 303, { location: "/t/login-2fa" })
        if (req.method === "POST") {
          const f = await formFields(req, u)
          if ((f.get("otp") ?? "").trim() !== oneTimeCode) {
            return send(res, formPage("Verify", `<h1>Two-step verification</h1><p>That code is not right.</p><p><a href="/t/login-2fa/verify">Try again</a></p>`))
          }
          sessions.set(sid, "verified")
          return send(res, "", 303, { location: "/t/login-2fa/account" })
        }
        return send(res, formPage("Verify", `<h1>Two-step verification</h1><p>We sent a 6-digit code to your phone. Ask the account owner for it.</p>
<form method="post"><p><label>One-time code <input name="otp" inputmode="numeric" autocomplete="one-time-code"></label></p><button type="submit">Verify</button></form>`))
      }
      case "/t/login-2fa/account": {
        const sid = cookie(req, "eval2fa")
        if (sid === undefined || sessions.get(sid) !== "verified") return send(res, "", 303, { location: "/t/login-2fa" })
        return send(res, formPage("Account", `<h1>Welcome, eval</h1>${reveal("login-2fa")}`))
      }
      // ---- file download into the workspace
      case "/t/download": {
        return send(res, formPage("Statements", `<h1>Statements</h1><p><a href="/t/download/statement.csv">Download the March statement</a></p>`))
      }
      case "/t/download/statement.csv": {
        solved.add("download")
        res.writeHead(200, { "content-type": "text/csv", "content-disposition": "attachment; filename=\"statement.csv\"", "cache-control": "no-store" })
        return void res.end(`date,item,amount\n2026-03-02,coffee,3.20\n2026-03-09,books,24.00\nsuccess_code,${codeOf("download")},\n`)
      }
      // ---- file input
      case "/t/file-input": {
        if (req.method === "POST") {
          const files = multipartFiles(await readBody(req), req.headers["content-type"] ?? "")
          const ok = files.some((f) => f.filename === "invoice.txt" && f.data.toString("utf8") === uploadContent)
          return send(res, formPage("Upload", ok ? `<h1>Invoice received</h1>${reveal("file-input")}` : `<h1>Upload failed</h1><p>${files.length} file(s), not the invoice.</p>`))
        }
        return send(res, formPage("Upload", `<h1>Upload your invoice</h1><form method="post" enctype="multipart/form-data">
<p><label>Invoice file <input type="file" name="invoice"></label></p><button type="submit">Upload invoice</button></form>`))
      }
    }
    // ---- search results' item pages
    const item = /^\/t\/search-extract\/item\/(p\d)$/.exec(path)
    if (item !== null) {
      const p = catalogue.find((c) => c.id === item[1])
      if (p === undefined) return send(res, formPage("Not found", "<h1>Not found</h1>"), 404)
      if (p.id === "p2") solved.add("search-extract")
      return send(res, formPage(p.name, `<h1>${esc(p.name)}</h1><p>Price: ${p.price} EUR</p><p>Reference number: ${p.id === "p2" ? codeOf("search-extract") : `REF-${p.id.toUpperCase()}`}</p>`))
    }
    // ---- pagination: five per page; the product pages
    if (path === "/t/pagination") {
      const n = Math.max(1, Math.min(5, Number(u.searchParams.get("page") ?? "1") || 1))
      const slice = products.slice((n - 1) * 5, n * 5)
      return send(res, formPage(`Products, page ${n}`, `<h1>Products</h1><p>Page ${n} of 5</p><ul>${slice.map((p) => `<li><a href="/t/pagination/item/${encodeURIComponent(p)}">${esc(p)}</a></li>`).join("")}</ul>
<nav aria-label="Pagination">${n > 1 ? `<a href="/t/pagination?page=${n - 1}">Previous page</a> ` : ""}${n < 5 ? `<a href="/t/pagination?page=${n + 1}">Next page</a>` : ""}</nav>`))
    }
    const product = /^\/t\/pagination\/item\/(.+)$/.exec(path)
    if (product !== null) {
      const name = decodeURIComponent(product[1]!)
      if (!products.includes(name)) return send(res, formPage("Not found", "<h1>Not found</h1>"), 404)
      return send(res, formPage(name, `<h1>${esc(name)}</h1>${name === "Teal lamp" ? reveal("pagination") : "<p>A fine product.</p>"}`))
    }
    const found = pages[path]
    if (found !== undefined) return send(res, found)
    send(res, formPage("Not found", "<h1>Not found</h1>"), 404)
  }

  const listen = async (port: number): Promise<Server> => {
    const server = createServer((req, res) => {
      handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" })
        res.end(String(error))
      })
    })
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(port, host, () => resolve())
    })
    return server
  }
  const main = await listen(options.port ?? 0)
  const cross = await listen(0)
  const hostInUrl = publicHost.includes(":") ? `[${publicHost}]` : publicHost
  url = `http://${hostInUrl}:${(main.address() as AddressInfo).port}`
  crossUrl = `http://${hostInUrl}:${(cross.address() as AddressInfo).port}`
  pages = staticPages(crossUrl)
  const close = (server: Server) =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return { url, crossUrl, codeOf, solved, oneTimeCode, uploadContent, close: () => Promise.all([close(main), close(cross)]).then(() => undefined) }
}

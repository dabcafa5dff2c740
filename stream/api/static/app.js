// Dashboard of the read API: leaderboard (search, pagination), player page (rating chart with the
// ±sigma band and performances), round page, live updates through Server-Sent Events.
// Plain JS, no build step. Routes live in the URL hash: #/l/LADDER, #/l/LADDER/p/PLAYER, #/l/LADDER/r/ROUND.
"use strict";

const PAGE_SIZE = 25;
const HISTORY_POINTS = 200;
const CHART = { width: 880, height: 320, pad: { left: 56, right: 16, top: 16, bottom: 32 } };
const SVG_NS = "http://www.w3.org/2000/svg";

const state = { ladder: null, offset: 0, search: "", events: null };
const view = document.getElementById("view");
const select = document.getElementById("ladder-select");
const live = document.getElementById("live");

// ---- helpers --------------------------------------------------------------------------
const enc = encodeURIComponent;
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}
function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}
const fmt = (x, digits = 0) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
const when = (t) => (t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 16) : "–");
function delta(before, after) {
  const d = after - before;
  return el("span", { class: d >= 0 ? "up" : "down", text: (d >= 0 ? "+" : "") + d.toFixed(0) });
}
async function api(path) {
  const resp = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await resp.json();
  if (!resp.ok) throw new Error(body.message || resp.statusText);
  return body;
}
function card(label, value) {
  return el("div", { class: "card" }, el("div", { class: "value", text: value }), el("div", { class: "label", text: label }));
}
function link(text, hash) { return el("a", { href: hash, text }); }
const playerHash = (ladder, p) => `#/l/${enc(ladder)}/p/${enc(p)}`;
// API URL of a player ("player") or round ("round"): the id is one percent-encoded path segment, so
// it may hold "/", "%", spaces, any Unicode. "." and ".." cannot be path segments (URL parsers drop
// them, %2E too): those two go through the query form /player?id= (or /round?id=).
function itemUrl(ladder, kind, id, query = "") {
  const base = `/api/ladders/${enc(ladder)}`;
  if (id === "." || id === "..") return `${base}/${kind}?id=${enc(id)}` + (query ? `&${query}` : "");
  return `${base}/${kind}s/${enc(id)}` + (query ? `?${query}` : "");
}
const roundHash = (ladder, r) => `#/l/${enc(ladder)}/r/${enc(r)}`;

// ---- views ----------------------------------------------------------------------------
async function showLeaderboard(ladder) {
  const q = `offset=${state.offset}&limit=${PAGE_SIZE}` + (state.search ? `&search=${enc(state.search)}` : "");
  const [summary, page, rounds] = await Promise.all([
    api(`/api/ladders/${enc(ladder)}`),
    api(`/api/ladders/${enc(ladder)}/leaderboard?${q}`),
    api(`/api/ladders/${enc(ladder)}/rounds?limit=10`),
  ]);
  const search = el("input", { id: "search", type: "search", placeholder: "player id prefix…", value: state.search });
  search.addEventListener("change", () => { state.search = search.value.trim(); state.offset = 0; render(); });
  const prev = el("button", { id: "prev", text: "← previous" });
  const next = el("button", { id: "next", text: "next →" });
  prev.disabled = state.offset === 0;
  next.disabled = state.offset + PAGE_SIZE >= page.total;
  prev.addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE_SIZE); render(); });
  next.addEventListener("click", () => { state.offset += PAGE_SIZE; render(); });

  const body = el("tbody");
  for (const row of page.rows) {
    body.append(el("tr", { class: "lb-row", "data-player": row.player },
      el("td", { class: "num", text: String(row.position) }),
      el("td", {}, link(row.player, playerHash(ladder, row.player))),
      el("td", { class: "num", text: fmt(row.display_rating) }),
      el("td", { class: "num", text: fmt(row.mu) }),
      el("td", { class: "num", text: fmt(row.sigma) }),
      el("td", { text: row.tier || "–" }),
      el("td", { class: "num", text: fmt(row.rounds) })));
  }
  const table = el("table", { id: "leaderboard" },
    el("thead", {}, el("tr", {}, ...["#", "player", "rating", "μ", "σ", "tier", "rounds"].map(
      (h, i) => el("th", { class: [0, 2, 3, 4, 6].includes(i) ? "num" : "", text: h })))),
    body);
  const roundList = el("ul", { id: "recent-rounds" }, ...rounds.rounds.map((r) => el("li", {},
    link(r.round_id, roundHash(ladder, r.round_id)),
    el("span", { class: "muted", text: ` · ${r.field_size ?? "?"} players · ${r.status} · ${when(r.occurred_at)}` }))));
  const shown = page.total === 0 ? "no players" :
    `${page.offset + 1}–${page.offset + page.rows.length} of ${page.total}` + (page.truncated ? "+" : "");
  view.replaceChildren(
    el("h1", { text: `Ladder ${ladder}` }),
    el("div", { class: "cards" }, card("players", String(summary.leaderboard_size)),
      card("rounds rated", String(summary.rounds_rated)), card("last update", when(summary.updated_at)),
      card("display", summary.display.mode + (summary.display.mode === "conservative" ? ` (μ − ${summary.display.k}σ)` : ""))),
    el("div", { class: "toolbar" }, search, prev, next, el("span", { id: "page-info", class: "muted", text: shown })),
    table,
    el("h2", { text: "Recent rounds" }), roundList);
}

function ratingChart(history, playerId) {
  const { width, height, pad } = CHART;
  const pts = history.map((h) => ({ t: h.occurred_at, mu: h.mu_after, s: h.sigma_after, p: h.performance }));
  const root = svg("svg", { class: "chart", id: "rating-chart", viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `rating of ${playerId} over time` });
  if (pts.length === 0) return root;
  const ys = pts.flatMap((d) => [d.mu - d.s, d.mu + d.s, d.p]);
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (y1 - y0 < 1) { y0 -= 50; y1 += 50; }
  const t0 = pts[0].t, t1 = pts[pts.length - 1].t;
  const x = (t, i) => pad.left + (t1 > t0 ? (t - t0) / (t1 - t0) : pts.length > 1 ? i / (pts.length - 1) : 0.5) * (width - pad.left - pad.right);
  const y = (v) => height - pad.bottom - ((v - y0) / (y1 - y0)) * (height - pad.top - pad.bottom);
  for (const v of [y0, (y0 + y1) / 2, y1]) {
    root.append(svg("line", { class: "axis", x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v) }));
    const label = svg("text", { x: 4, y: y(v) + 4 }); label.textContent = v.toFixed(0); root.append(label);
  }
  const upper = pts.map((d, i) => `${x(d.t, i)},${y(d.mu + d.s)}`);
  const lower = pts.map((d, i) => `${x(d.t, i)},${y(d.mu - d.s)}`).reverse();
  root.append(svg("polygon", { class: "band", id: "sigma-band", points: upper.concat(lower).join(" ") }));
  root.append(svg("polyline", { class: "line", id: "rating-line", points: pts.map((d, i) => `${x(d.t, i)},${y(d.mu)}`).join(" ") }));
  pts.forEach((d, i) => {
    const c = svg("circle", { class: "perf-point", cx: x(d.t, i), cy: y(d.p), r: 4 });
    const tip = svg("title"); tip.textContent = `performance ${d.p.toFixed(0)} (${when(d.t)})`; c.append(tip);
    root.append(c);
  });
  for (const [i, anchor] of [[0, "start"], [pts.length - 1, "end"]]) {
    const label = svg("text", { x: x(pts[i].t, i), y: height - 8, "text-anchor": anchor });
    label.textContent = when(pts[i].t).slice(0, 10); root.append(label);
  }
  return root;
}

async function showPlayer(ladder, playerId) {
  const p = await api(itemUrl(ladder, "player", playerId, `history=${HISTORY_POINTS}`));
  const rows = p.history.slice().reverse().map((h) => el("tr", { class: "history-row" },
    el("td", {}, link(h.round_id, roundHash(ladder, h.round_id))),
    el("td", { text: when(h.occurred_at) }),
    el("td", { class: "num", text: `${h.rank} / ${h.field_size}` }),
    el("td", { class: "num", text: fmt(h.performance) }),
    el("td", { class: "num", text: fmt(h.mu_after) }),
    el("td", { class: "num" }, delta(h.mu_before, h.mu_after))));
  view.replaceChildren(
    el("p", {}, link(`← ${ladder} leaderboard`, `#/l/${enc(ladder)}`)),
    el("h1", { id: "player-name", text: p.player }),
    el("div", { class: "cards" },
      card("rating", fmt(p.display_rating)), card("μ ± σ", `${fmt(p.mu)} ± ${fmt(p.sigma)}`),
      card("tier", p.tier || "–"), card("position", p.position ? `${p.position} / ${p.leaderboard_size}` : "–"),
      card("rounds", String(p.rounds))),
    el("div", { class: "legend muted" }, el("span", { text: "— μ after each round" }),
      el("span", { text: "▒ μ ± σ" }), el("span", { text: "● performance" })),
    ratingChart(p.history, p.player),
    el("h2", { text: "History" }),
    el("table", { id: "history" }, el("thead", {}, el("tr", {}, ...["round", "when", "rank", "performance", "μ", "change"]
      .map((h, i) => el("th", { class: i >= 2 ? "num" : "", text: h })))), el("tbody", {}, ...rows)));
}

async function showRound(ladder, roundId) {
  const r = await api(itemUrl(ladder, "round", roundId));
  const rows = r.results.map((c) => el("tr", { class: "round-row" },
    el("td", { class: "num", text: String(c.rank) }),
    el("td", {}, link(c.player, playerHash(ladder, c.player))),
    el("td", { class: "num", text: fmt(c.performance) }),
    el("td", { class: "num", text: `${fmt(c.mu_before)} → ${fmt(c.mu_after)}` }),
    el("td", { class: "num" }, delta(c.mu_before, c.mu_after)),
    el("td", { class: "num", text: fmt(c.display_rating) })));
  view.replaceChildren(
    el("p", {}, link(`← ${ladder} leaderboard`, `#/l/${enc(ladder)}`)),
    el("h1", { id: "round-name", text: `Round ${r.round_id}` }),
    el("div", { class: "cards" }, card("status", r.record.status || "–"), card("players", fmt(r.record.field_size)),
      card("occurred", when(r.record.occurred_at)), card("rated", when(r.record.rated_at))),
    r.complete ? "" : el("p", { class: "muted", text: `showing the first ${r.results.length} results` }),
    el("table", { id: "round-results" }, el("thead", {}, el("tr", {}, ...["rank", "player", "performance", "μ", "change", "rating"]
      .map((h, i) => el("th", { class: i === 1 ? "" : "num", text: h })))), el("tbody", {}, ...rows)));
}

// ---- routing and live updates ---------------------------------------------------------
function parseRoute() {
  const decode = (part) => { try { return decodeURIComponent(part); } catch { return part; } };  // a typed bare "%"
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decode);
  if (parts[0] !== "l" || !parts[1]) return { kind: "home" };
  if (parts[2] === "p" && parts[3] !== undefined) return { kind: "player", ladder: parts[1], id: parts.slice(3).join("/") };
  if (parts[2] === "r" && parts[3] !== undefined) return { kind: "round", ladder: parts[1], id: parts.slice(3).join("/") };
  return { kind: "ladder", ladder: parts[1] };
}

function subscribe(ladder) {
  if (state.events && state.events.ladder === ladder) return;
  if (state.events) state.events.source.close();
  const source = new EventSource(`/api/ladders/${enc(ladder)}/events`);
  let first = true;
  source.addEventListener("update", () => { live.classList.add("on"); if (!first) render(); first = false; });
  source.onerror = () => live.classList.remove("on");
  state.events = { ladder, source };
}

async function render() {
  const route = parseRoute();
  try {
    const { ladders } = await api("/api/ladders");
    select.replaceChildren(...ladders.map((l) => el("option", { value: l.ladder, text: l.ladder })));
    if (route.kind === "home") {
      if (ladders.length === 0) { view.replaceChildren(el("p", { class: "muted", text: "No ladders yet." })); return; }
      location.hash = `#/l/${enc(ladders[0].ladder)}`;
      return;
    }
    if (state.ladder !== route.ladder) { state.ladder = route.ladder; state.offset = 0; state.search = ""; }
    select.value = route.ladder;
    subscribe(route.ladder);
    if (route.kind === "player") await showPlayer(route.ladder, route.id);
    else if (route.kind === "round") await showRound(route.ladder, route.id);
    else await showLeaderboard(route.ladder);
  } catch (err) {
    view.replaceChildren(el("p", { class: "error", id: "error", text: String(err.message || err) }));
  }
}

select.addEventListener("change", () => { location.hash = `#/l/${enc(select.value)}`; });
window.addEventListener("hashchange", render);
render();

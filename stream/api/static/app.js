// Dashboard of the read API: leaderboard (search, pagination, rating histogram with tier bands, rounds
// rated over time), player page (rating chart with the interval band (mu ± interval_z·sigma) and performances, leaderboard
// place and tier over time), round page, match-up page, rejected rounds, live updates through
// Server-Sent Events.
// Plain JS, no build step. Routes live in the URL hash: #/l/LADDER, #/l/LADDER/p/PLAYER,
// #/l/LADDER/r/ROUND, #/l/LADDER/rejected, #/l/LADDER/matchup/PICK/... (parseMatchup).
//
// A view is built once per route; a live update only re-reads its data and patches what changed
// (cell texts, rows added, moved or removed, card values, the chart's shapes), so the search box
// keeps its text and focus, the page keeps its scroll position and its leaderboard page.
"use strict";

const PAGE_SIZE = 25;
const HISTORY_POINTS = 200;
const REJECTED_SHOWN = 100;
const REJECTED_REFRESH_MS = 5000;
const EMPTY_RETRY_MS = 2000;
const SEARCH_DEBOUNCE_MS = 250;
const CHART = { width: 880, height: 320, pad: { left: 56, right: 16, top: 16, bottom: 32 } };
const MATCHUP = { width: 880, height: 200, pad: { left: 160, right: 16, top: 8, bottom: 8 } };
const HISTOGRAM = { width: 880, height: 180, bins: 30, pad: { left: 40, right: 16, top: 18, bottom: 24 } };
const ROUNDS_CHART = { width: 880, height: 160, points: 60, pad: { left: 56, right: 16, top: 12, bottom: 24 } };
const RANK_CHART = { width: 880, height: 220, strip: 22, pad: { left: 56, right: 16, top: 12, bottom: 24 } };
const SVG_NS = "http://www.w3.org/2000/svg";

// ?live=off starts paused without an event stream (headless screenshots: nothing keeps loading)
const startPaused = new URLSearchParams(location.search).get("live") === "off";
const state = { view: null, offset: 0, search: "", events: null, paused: startPaused, missed: false, ticket: 0 };
const main = document.getElementById("view");
const select = document.getElementById("ladder-select");
const live = document.getElementById("live");
const pause = document.getElementById("pause");
const banner = document.getElementById("error");

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
function setText(node, text) { if (node.textContent !== text) node.textContent = text; }
function setAttr(node, name, value) { if (node.getAttribute(name) !== value) node.setAttribute(name, value); }
const fmt = (x, digits = 0) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
const when = (t) => (t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 16) : "–");
const signed = (d) => (d >= 0 ? "+" : "") + d.toFixed(0);
// The x axis's two end labels (UTC): dates when they differ, the times of the day when not, one label
// when both are the same moment (never two identical or overlapping labels).
function timeLabels(t0, t1) {
  const a = when(t0), b = when(t1);
  if (a === b) return [`${a} UTC`, null];
  if (a.slice(0, 10) === b.slice(0, 10)) return [`${a} UTC`, b.slice(11)];
  return [a.slice(0, 10), `${b.slice(0, 10)} UTC`];
}
// The two end labels of a chart's time axis, and a title for its y axis (top left, inside the plot).
function timeAxis(x0, x1, y, t0, t1, title, titleX, titleY) {
  const out = [];
  timeLabels(t0, t1).forEach((text, i) => {
    if (text === null) return;
    const label = svg("text", { class: "time-label", x: i === 0 ? x0 : x1, y, "text-anchor": i === 0 ? "start" : "end" });
    label.textContent = text; out.push(label);
  });
  const head = svg("text", { class: "axis-title", x: titleX, y: titleY }); head.textContent = title; out.push(head);
  return out;
}
async function api(path) {
  const resp = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await resp.json();
  if (!resp.ok) throw Object.assign(new Error(body.message || resp.statusText), { status: resp.status, code: body.error });
  return body;
}
function link(text, hash) { return el("a", { href: hash, text }); }
const ladderHash = (ladder) => `#/l/${enc(ladder)}`;
const playerHash = (ladder, p) => `#/l/${enc(ladder)}/p/${enc(p)}`;
const roundHash = (ladder, r) => `#/l/${enc(ladder)}/r/${enc(r)}`;
const decode = (part) => { try { return decodeURIComponent(part); } catch { return part; } };  // a typed bare "%"
// A match-up in the URL: one segment per pick, "PLAYER" (players) or "PLAYER;TEAM;SHARE" (teams: the
// team's letter and the share played), each part percent-encoded (so ";" and "=" never occur in one),
// and in teams mode "draw=MARGIN" (rating points within which two teams' performances draw).
const TEAM_NAMES = "ABCDEFGH";
function parseMatchup(segments) {
  const m = { picks: [], teams: false, margin: 0 };
  for (const s of segments) {
    if (s.startsWith("draw=")) { m.margin = Math.max(Number(s.slice(5)) || 0, 0); continue; }
    const [player, team, share] = s.split(";").map(decode);
    if (team !== undefined) m.teams = true;
    if (!m.picks.some((p) => p.player === player)) m.picks.push({ player, team: team || "A", share: Number(share) || 1 });
  }
  return m;
}
const matchupHash = (ladder, m) => [`#/l/${enc(ladder)}/matchup`,
  ...m.picks.map((p) => (m.teams ? [p.player, p.team, p.share].map(enc).join(";") : enc(p.player))),
  ...(m.teams && m.margin > 0 ? [`draw=${m.margin}`] : [])].join("/");
// API URL of a player ("player") or round ("round"): the id is one percent-encoded path segment, so
// it may hold "/", "%", spaces, any Unicode. "." and ".." cannot be path segments (URL parsers drop
// them, %2E too): those two go through the query form /player?id= (or /round?id=).
// ``suffix``: a sub-resource ("/ranks").
function itemUrl(ladder, kind, id, query = "", suffix = "") {
  const base = `/api/ladders/${enc(ladder)}`;
  if (id === "." || id === "..") return `${base}/${kind}${suffix}?id=${enc(id)}` + (query ? `&${query}` : "");
  return `${base}/${kind}s/${enc(id)}${suffix}` + (query ? `?${query}` : "");
}

// Cards: label -> value node, patched in place.
function cards(labels) {
  const values = {};
  const root = el("div", { class: "cards" }, ...labels.map((label) => {
    values[label] = el("div", { class: "value", text: "–" });
    return el("div", { class: "card", "data-card": label }, values[label], el("div", { class: "label", text: label }));
  }));
  return { root, set: (label, text) => setText(values[label], text) };
}

// A table body kept in step with a list: rows are keyed (data-key), reused, moved and removed;
// ``make(item)`` builds a row's cells once, ``fill(tr, item)`` patches their contents.
function patchRows(tbody, items, keyOf, make, fill) {
  const old = new Map(Array.from(tbody.children, (tr) => [tr.dataset.key, tr]));
  let previous = null;
  for (const item of items) {
    const key = keyOf(item);
    let tr = old.get(key);
    if (tr) old.delete(key); else { tr = make(item); tr.dataset.key = key; }
    fill(tr, item);
    const slot = previous ? previous.nextSibling : tbody.firstChild;
    if (tr !== slot) tbody.insertBefore(tr, slot);
    previous = tr;
  }
  for (const tr of old.values()) tr.remove();
}
function cells(tr, n, numeric = []) {
  for (let i = 0; i < n; i++) tr.append(el("td", numeric.includes(i) ? { class: "num" } : {}));
  return tr;
}
function setLink(td, text, hash) {
  let a = td.firstElementChild;
  if (!a) { a = el("a"); td.append(a); }
  setText(a, text); setAttr(a, "href", hash);
}
function setDelta(td, before, after) {
  const d = after - before;
  setText(td, signed(d)); setAttr(td, "class", "num " + (d >= 0 ? "up" : "down"));
}
function table(id, headers, numeric) {
  const body = el("tbody");
  const root = el("table", { id }, el("thead", {}, el("tr", {}, ...headers.map(
    (h, i) => el("th", { class: numeric.includes(i) ? "num" : "", text: h })))), body);
  return { root, body };
}
// One error line for every view (index.html), above the view: the view stays as it was.
function showError(err) {
  banner.hidden = !err;
  setText(banner, err ? String(err.message || err) : "");
}

// ---- views: build(route) once, then load() + patch(data) on every refresh ---------------
function leaderboardView(ladder) {
  const board = cards(["players", "rounds rated", "last update", "display"]);
  const search = el("input", { id: "search", type: "search", placeholder: "player id prefix…",
    autocomplete: "off", spellcheck: "false" });
  search.value = state.search;
  let debounce = null;
  const apply = () => {
    clearTimeout(debounce);
    const text = search.value.trim();
    if (text === state.search) return;
    state.search = text; state.offset = 0; refresh();
  };
  search.addEventListener("input", () => { clearTimeout(debounce); debounce = setTimeout(apply, SEARCH_DEBOUNCE_MS); });
  search.addEventListener("change", apply);
  search.addEventListener("keydown", (e) => { if (e.key === "Enter") apply(); });
  const prev = el("button", { id: "prev", text: "← previous" });
  const next = el("button", { id: "next", text: "next →" });
  const info = el("span", { id: "page-info", class: "muted" });
  const eligible = el("input", { id: "eligible-only", type: "checkbox" });  // the ladder's leaderboard rules
  eligible.checked = Boolean(state.eligible);
  search.disabled = eligible.checked;  // the eligible page is not searched
  eligible.addEventListener("change", () => {
    state.eligible = eligible.checked; search.disabled = eligible.checked; state.offset = 0; refresh();
  });
  prev.addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE_SIZE); refresh(); });
  next.addEventListener("click", () => { state.offset += PAGE_SIZE; refresh(); });
  const lb = table("leaderboard", ["#", "player", "rating", "μ", "σ", "interval", "tier", "rounds"], [0, 2, 3, 4, 5, 7]);
  const histogram = svg("svg", { class: "chart", id: "rating-histogram", role: "img",
    viewBox: `0 0 ${HISTOGRAM.width} ${HISTOGRAM.height}`, "aria-label": `rating distribution of ${ladder}` });
  let drawnHistogram = "";
  const roundsChart = svg("svg", { class: "chart", id: "rounds-chart", role: "img",
    viewBox: `0 0 ${ROUNDS_CHART.width} ${ROUNDS_CHART.height}`, "aria-label": `rounds rated over time in ${ladder}` });
  let drawnRounds = "";
  const recent = el("ul", { id: "recent-rounds" });
  const view = {};
  view.nodes = [
    el("h1", { text: `Ladder ${ladder}` }), board.root, histogram,
    el("div", { class: "toolbar" }, search, prev, next, info,
      el("label", { title: "only the players the ladder's leaderboard rules admit" }, eligible, "eligible only"),
      el("a", { id: "matchup-link", href: `${ladderHash(ladder)}/matchup`, text: "match-up" }),
      el("a", { id: "whatif-link", href: `${ladderHash(ladder)}/what-if`, text: "what if…" }),
      el("a", { id: "seasons-link", href: `${ladderHash(ladder)}/seasons`, text: "seasons" }),
      el("a", { id: "rejected-link", href: `${ladderHash(ladder)}/rejected`, text: "rejected rounds" })),
    lb.root,
    el("p", { id: "tier-note", class: "muted", text: "rating: the ladder's display rating (by default the conservative " +
      "μ − 2σ). A player keeps his tier until his rating falls below its threshold by the ladder's demotion margin, " +
      "so a lower-rated player can show a higher tier." }),
    el("h2", { text: "Rounds rated over time" }), roundsChart, el("h2", { text: "Recent rounds" }), recent];
  view.load = async () => {
    const q = `offset=${state.offset}&limit=${PAGE_SIZE}` +
      (state.eligible ? "&eligible=true" : state.search ? `&search=${enc(state.search)}` : "");
    const [summary, page, rounds, distribution, activity] = await Promise.all([
      api(`/api/ladders/${enc(ladder)}`),
      api(`/api/ladders/${enc(ladder)}/leaderboard?${q}`),
      api(`/api/ladders/${enc(ladder)}/rounds?limit=10`),
      api(`/api/ladders/${enc(ladder)}/distribution?bins=${HISTOGRAM.bins}`),
      api(`/api/ladders/${enc(ladder)}/activity?points=${ROUNDS_CHART.points}`),
    ]);
    return { summary, page, rounds, distribution, activity };
  };
  view.patch = ({ summary, page, rounds, distribution, activity }) => {
    const signature = JSON.stringify([distribution.low, distribution.high, distribution.counts]);
    if (signature !== drawnHistogram) { drawnHistogram = signature; histogram.replaceChildren(...histogramShapes(distribution)); }
    const roundsSignature = JSON.stringify(activity.points);
    if (roundsSignature !== drawnRounds) { drawnRounds = roundsSignature; roundsChart.replaceChildren(...roundsShapes(activity)); }
    board.set("players", String(summary.leaderboard_size));
    board.set("rounds rated", String(summary.rounds_rated));
    board.set("last update", when(summary.updated_at));
    board.set("display", summary.display.mode + (summary.display.mode === "conservative" ? ` (μ − ${summary.display.k}σ)` : ""));
    prev.disabled = state.offset === 0;
    next.disabled = state.offset + PAGE_SIZE >= page.total;
    setText(info, page.total === 0 ? (page.search ? "no match" : "no players") :
      `${page.offset + 1}–${page.offset + page.rows.length} of ${page.total}` + (page.truncated ? "+" : ""));
    patchRows(lb.body, page.rows, (row) => row.player, (row) => {
      const tr = cells(el("tr", { class: "lb-row" }), 8, [0, 2, 3, 4, 5, 7]);
      tr.dataset.player = row.player;
      return tr;
    }, (tr, row) => {
      const td = tr.children;
      setText(td[0], String(row.position));
      setLink(td[1], row.player, playerHash(ladder, row.player));
      setText(td[2], fmt(row.display_rating) + (row.provisional ? "?" : "")); setText(td[3], fmt(row.mu));
      setText(td[4], fmt(row.sigma_now ?? row.sigma));
      setText(td[5], row.interval ? `${fmt(row.interval[0])}–${fmt(row.interval[1])}` : "–");
      setAttr(td[5], "title", row.interval ? `μ ± ${row.interval_z}σ now` : "");
      setText(td[6], row.tier || "–"); setText(td[7], fmt(row.rounds));
      setAttr(tr, "title", row.eligible === false ? `not eligible: ${row.ineligible_reasons.join(", ")}` :
        (row.provisional ? "provisional rating" : ""));
    });
    patchRows(recent, rounds.rounds, (r) => r.round_id, () => el("li", {}, el("a"), el("span", { class: "muted" })),
      (li, r) => {
        setText(li.children[0], r.round_id); setAttr(li.children[0], "href", roundHash(ladder, r.round_id));
        setText(li.children[1], ` · ${r.field_size ?? "?"} players · ${r.status} · ${when(r.occurred_at)}`);
      });
  };
  return view;
}

// Players per slice of the display rating, with the tiers as shaded bands behind the bars.
function histogramShapes(d) {
  const { width, height, pad } = HISTOGRAM;
  if (!d.total) return [];
  const out = [];
  const span = d.high - d.low || 1;
  const x = (v) => pad.left + ((v - d.low) / span) * (width - pad.left - pad.right);
  const top = Math.max(...d.counts);
  const y = (n) => height - pad.bottom - (n / top) * (height - pad.top - pad.bottom);
  d.tiers.forEach((t, i) => {  // band from the tier's start to the next tier's start, within [low, high]
    const from = Math.max(d.low, t.from ?? d.low);
    const next = d.tiers[i + 1] ? Math.min(d.high, d.tiers[i + 1].from) : d.high;
    if (next <= from) return;
    const band = svg("rect", { class: `tier-band tier-${i % 2}`, "data-tier": t.tier, x: x(from), y: pad.top,
      width: x(next) - x(from), height: height - pad.top - pad.bottom });
    const tip = svg("title"); tip.textContent = `${t.tier}: from ${t.from === null ? "the bottom" : t.from.toFixed(0)}`;
    band.append(tip); out.push(band);
    const label = svg("text", { x: x(from) + 3, y: pad.top - 5 }); label.textContent = t.tier; out.push(label);
  });
  const step = (width - pad.left - pad.right) / d.counts.length;
  d.counts.forEach((n, i) => {
    const bar = svg("rect", { class: "bar", "data-count": n, x: pad.left + i * step + 1, y: y(n),
      width: Math.max(step - 2, 1), height: height - pad.bottom - y(n) });
    const low = d.low + (i * span) / d.counts.length;
    const tip = svg("title"); tip.textContent = `${n} players rated ${low.toFixed(0)}–${(low + span / d.counts.length).toFixed(0)}`;
    bar.append(tip); out.push(bar);
  });
  for (const [v, anchor] of [[d.low, "start"], [d.high, "end"]]) {
    const label = svg("text", { x: x(v), y: height - 6, "text-anchor": anchor }); label.textContent = v.toFixed(0); out.push(label);
  }
  const most = svg("text", { x: 4, y: pad.top + 10 }); most.textContent = String(top); out.push(most);
  return out;
}

// Rounds rated by each moment: the sampled rounds of /activity (their place in the ladder's rounds
// index) against when each was rated; rounds not rated yet are left out.
function roundsShapes(activity) {
  const { width, height, pad } = ROUNDS_CHART;
  const pts = activity.points.filter((p) => p.rated_at !== null);
  if (pts.length === 0) return [];
  const out = [];
  const t0 = pts[0].rated_at, t1 = pts[pts.length - 1].rated_at;
  const top = Math.max(...pts.map((p) => p.rounds));
  const x = (t, i) => pad.left + (t1 > t0 ? (t - t0) / (t1 - t0) : pts.length > 1 ? i / (pts.length - 1) : 0.5) * (width - pad.left - pad.right);
  const y = (n) => height - pad.bottom - (n / top) * (height - pad.top - pad.bottom);
  for (const v of [0, top]) {
    out.push(svg("line", { class: "axis", x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v) }));
    const label = svg("text", { x: 4, y: y(v) + 4 }); label.textContent = String(v); out.push(label);
  }
  out.push(svg("polyline", { class: "line", id: "rounds-line", points: pts.map((p, i) => `${x(p.rated_at, i)},${y(p.rounds)}`).join(" ") }));
  pts.forEach((p, i) => {
    const c = svg("circle", { class: "rounds-point", "data-rounds": p.rounds, "data-round": p.round_id, cx: x(p.rated_at, i), cy: y(p.rounds), r: 3 });
    const tip = svg("title"); tip.textContent = `${p.rounds} rounds by ${when(p.rated_at)} (round ${p.round_id})`; c.append(tip);
    out.push(c);
  });
  out.push(...timeAxis(x(t0, 0), x(t1, pts.length - 1), height - 6, t0, t1, "rounds rated", pad.left + 4, pad.top + 10));
  return out;
}

// Leaderboard place after each round (1 at the top) and, in a strip below, the tier then.
function rankShapes(timeline) {
  const { width, height, strip, pad } = RANK_CHART;
  const pts = timeline.points;
  if (pts.length === 0) return [];
  const out = [];
  const bottom = height - pad.bottom - strip - 6;  // the place line's lowest y
  const worst = Math.max(...pts.map((p) => p.position), 2);
  const t0 = pts[0].occurred_at, t1 = pts[pts.length - 1].occurred_at;
  const x = (t, i) => pad.left + (t1 > t0 ? (t - t0) / (t1 - t0) : pts.length > 1 ? i / (pts.length - 1) : 0.5) * (width - pad.left - pad.right);
  const y = (place) => pad.top + ((place - 1) / (worst - 1)) * (bottom - pad.top);
  for (const v of [1, worst]) {
    out.push(svg("line", { class: "axis", x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v) }));
    const label = svg("text", { x: 4, y: y(v) + 4 }); label.textContent = `#${v}`; out.push(label);
  }
  out.push(svg("polyline", { class: "line", id: "rank-line", points: pts.map((p, i) => `${x(p.occurred_at, i)},${y(p.position)}`).join(" ") }));
  const stripTop = height - pad.bottom - strip;
  pts.forEach((p, i) => {  // tier strip: from this point to the next one
    const from = i === 0 ? pad.left : (x(pts[i - 1].occurred_at, i - 1) + x(p.occurred_at, i)) / 2;
    const to = i === pts.length - 1 ? width - pad.right : (x(p.occurred_at, i) + x(pts[i + 1].occurred_at, i + 1)) / 2;
    const level = p.tier === null ? -1 : timeline.tiers.indexOf(p.tier);
    const seg = svg("rect", { class: `tier-seg tier-level-${level < 0 ? "none" : level % 4}`, "data-tier": p.tier ?? "",
      x: from, y: stripTop, width: Math.max(to - from, 0), height: strip });
    const tip = svg("title"); tip.textContent = `${p.tier ?? "not placed"} after ${p.round_id}`; seg.append(tip); out.push(seg);
  });
  pts.forEach((p, i) => {
    const c = svg("circle", { class: "rank-point", "data-position": p.position, "data-tier": p.tier ?? "",
      cx: x(p.occurred_at, i), cy: y(p.position), r: 4 });
    const tip = svg("title"); tip.textContent = `#${p.position} (${p.tier ?? "not placed"}) after ${p.round_id}, ${when(p.occurred_at)}`;
    c.append(tip); out.push(c);
  });
  let shown = null;  // a tier's name where the strip changes to it
  pts.forEach((p, i) => {
    if (p.tier === shown) return;
    shown = p.tier;
    const label = svg("text", { class: "tier-label", x: (i === 0 ? pad.left : x(p.occurred_at, i)) + 3, y: stripTop + strip - 7 });
    label.textContent = p.tier ?? "–"; out.push(label);
  });
  out.push(...timeAxis(x(t0, 0), x(t1, pts.length - 1), height - 6, t0, t1, "leaderboard place", pad.left + 4,
    pad.top + 10));
  return out;
}

function chart(playerId) {
  const { width, height } = CHART;
  const root = svg("svg", { class: "chart", id: "rating-chart", viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `rating of ${playerId} over time` });
  let drawn = "";
  // Redrawn only when the history changed (its length or newest event).
  root.update = (history) => {
    const signature = `${history.length}:${history.length ? history[history.length - 1].event_id : ""}`;
    if (signature === drawn) return;
    drawn = signature;
    root.replaceChildren(...chartShapes(history));
  };
  return root;
}

function chartShapes(history) {
  const { width, height, pad } = CHART;
  // the band is each rating's interval as the API gives it (mu ± interval_z·sigma), else mu ± sigma
  const pts = history.map((h) => ({ t: h.occurred_at, mu: h.mu_after, p: h.performance,
    lo: h.interval ? h.interval[0] : h.mu_after - h.sigma_after, hi: h.interval ? h.interval[1] : h.mu_after + h.sigma_after }));
  if (pts.length === 0) return [];
  const out = [];
  // a model without performances (LADDERS: glicko, trueskill, ...) has performance null: no point
  const ys = pts.flatMap((d) => (d.p === null || d.p === undefined ? [d.lo, d.hi] : [d.lo, d.hi, d.p]));
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (y1 - y0 < 1) { y0 -= 50; y1 += 50; }
  const t0 = pts[0].t, t1 = pts[pts.length - 1].t;
  const x = (t, i) => pad.left + (t1 > t0 ? (t - t0) / (t1 - t0) : pts.length > 1 ? i / (pts.length - 1) : 0.5) * (width - pad.left - pad.right);
  const y = (v) => height - pad.bottom - ((v - y0) / (y1 - y0)) * (height - pad.top - pad.bottom);
  for (const v of [y0, (y0 + y1) / 2, y1]) {
    out.push(svg("line", { class: "axis", x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v) }));
    const label = svg("text", { x: 4, y: y(v) + 4 }); label.textContent = v.toFixed(0); out.push(label);
  }
  const upper = pts.map((d, i) => `${x(d.t, i)},${y(d.hi)}`);
  const lower = pts.map((d, i) => `${x(d.t, i)},${y(d.lo)}`).reverse();
  out.push(svg("polygon", { class: "band", id: "sigma-band", points: upper.concat(lower).join(" ") }));
  out.push(svg("polyline", { class: "line", id: "rating-line", points: pts.map((d, i) => `${x(d.t, i)},${y(d.mu)}`).join(" ") }));
  pts.forEach((d, i) => {
    if (d.p === null || d.p === undefined) return;
    const c = svg("circle", { class: "perf-point", cx: x(d.t, i), cy: y(d.p), r: 4 });
    const tip = svg("title"); tip.textContent = `performance ${d.p.toFixed(0)} (${when(d.t)})`; c.append(tip);
    out.push(c);
  });
  out.push(...timeAxis(x(t0, 0), x(t1, pts.length - 1), height - 8, t0, t1, "rating points (μ, performance)",
    pad.left + 4, pad.top + 10));
  return out;
}

function playerView(ladder, playerId) {
  const board = cards(["rating", "μ ± σ", "tier", "position", "rounds"]);
  const name = el("h1", { id: "player-name" });
  const plot = chart(playerId);
  const ranks = svg("svg", { class: "chart", id: "rank-chart", role: "img", viewBox: `0 0 ${RANK_CHART.width} ${RANK_CHART.height}`,
    "aria-label": `leaderboard place and tier of ${playerId} over time` });
  let drawnRanks = "";
  const hist = table("history", ["round", "when (UTC)", "rank", "performance", "μ", "Δμ", ""], [2, 3, 4, 5]);
  const why = explainPanel(ladder, playerId);  // whatif.js
  const seasons = seasonsPanel(ladder, playerId);  // seasons.js
  const view = {};
  view.nodes = [el("p", {}, link(`← ${ladder} leaderboard`, ladderHash(ladder))), name, board.root,
    el("div", { class: "legend muted" }, el("span", { class: "lg-line", text: "— μ after each round" }),
      el("span", { class: "lg-band", text: "▒ μ ± σ" }), el("span", { class: "lg-perf", text: "● performance" }),
      el("span", { text: "rating above: the display rating (by default μ − 2σ); Δμ below: the round's change of μ; times UTC" })),
    plot, el("h2", { text: "Place and tier over time" }),
    el("p", { class: "muted", text: "each round's rating placed on today's leaderboard (past leaderboards are not kept)" }),
    ranks, seasons.root, why.root, el("h2", { text: "History" }), hist.root];
  view.load = async () => {
    const [p, timeline, season] = await Promise.all([api(itemUrl(ladder, "player", playerId, `history=${HISTORY_POINTS}`)),
      api(itemUrl(ladder, "player", playerId, `history=${HISTORY_POINTS}`, "/ranks")),
      seasons.load().catch(() => null)]);  // the seasons panel is secondary: the player's own answer says what is wrong
    return { ...p, timeline, season };
  };
  view.patch = (p) => {
    const signature = JSON.stringify([p.timeline.points, p.timeline.tiers]);
    if (signature !== drawnRanks) { drawnRanks = signature; ranks.replaceChildren(...rankShapes(p.timeline)); }
    setText(name, p.player);
    seasons.patch(p.season);
    board.set("rating", fmt(p.display_rating) + (p.provisional ? "? (provisional)" : ""));
    board.set("μ ± σ", `${fmt(p.mu)} ± ${fmt(p.sigma_now ?? p.sigma)}` + (p.interval ? ` [${fmt(p.interval[0])}, ${fmt(p.interval[1])}]` : ""));
    board.set("tier", p.tier || "–"); board.set("position", p.position ? `${p.position} / ${p.leaderboard_size}` : "–");
    board.set("rounds", String(p.rounds));
    plot.update(p.history);
    patchRows(hist.body, p.history.slice().reverse(), (h) => h.round_id,
      () => {
        const tr = cells(el("tr", { class: "history-row" }), 7, [2, 3, 4, 5]);
        const ask = el("button", { type: "button", class: "why", text: "why?" });
        ask.addEventListener("click", () => why.show(tr.dataset.key));
        tr.children[6].append(ask);
        return tr;
      }, (tr, h) => {
        const td = tr.children;
        setLink(td[0], h.round_id, roundHash(ladder, h.round_id));
        setText(td[1], when(h.occurred_at)); setText(td[2], `${h.rank} / ${h.field_size}`);
        setText(td[3], fmt(h.performance)); setText(td[4], fmt(h.mu_after)); setDelta(td[5], h.mu_before, h.mu_after);
        setAttr(td[4], "title", h.interval ? `μ ± ${h.interval_z}σ: ${fmt(h.interval[0])}–${fmt(h.interval[1])}` +
          (h.provisional ? " (provisional)" : "") : "");
      });
  };
  return view;
}

function roundView(ladder, roundId) {
  const board = cards(["status", "players", "occurred", "rated"]);
  const name = el("h1", { id: "round-name" });
  const partial = el("p", { class: "muted", hidden: "" });
  const trail = el("ul", { id: "round-trail", class: "muted", hidden: "" });  // the correction trail
  const results = table("round-results", ["rank", "team", "player", "performance", "μ", "change", "rating"],
    [0, 3, 4, 5, 6]);
  const view = {};
  view.nodes = [el("p", {}, link(`← ${ladder} leaderboard`, ladderHash(ladder))), name, board.root,
    trail, partial, results.root];
  view.load = () => api(itemUrl(ladder, "round", roundId));
  view.patch = (r) => {
    setText(name, `Round ${r.round_id}`);
    board.set("status", r.record.status || "–"); board.set("players", fmt(r.record.field_size));
    board.set("occurred", when(r.record.occurred_at)); board.set("rated", when(r.record.rated_at));
    partial.hidden = r.complete;
    setText(partial, r.complete ? "" : `showing the first ${r.results.length} results`);
    const steps = r.record.corrections || [];
    trail.hidden = steps.length === 0;
    trail.replaceChildren(...steps.map((s) => el("li", { class: "trail-step",
      text: `${s.kind === "void" ? "voided" : s.kind === "amend" ? "amended" : s.kind} ${when(s.at)} by correction ${s.id}` +
        (s.reason ? `: ${s.reason}` : "") })));
    // team rounds: results grouped by rank then team (each team's members together); a share of
    // the match below 1 (partial play) is shown beside the player
    const rows = r.results.slice().sort((a, b) => (a.rank - b.rank) || String(a.team ?? "").localeCompare(String(b.team ?? "")));
    patchRows(results.body, rows, (c) => c.player,
      () => cells(el("tr", { class: "round-row" }), 7, [0, 3, 4, 5, 6]), (tr, c) => {
        const td = tr.children;
        setText(td[0], String(c.rank)); setText(td[1], c.team ?? "");
        setLink(td[2], c.player, playerHash(ladder, c.player));
        if (c.weight !== undefined && c.weight !== null && c.weight < 1) {
          let share = td[2].querySelector(".share");
          if (!share) { share = el("span", { class: "share muted" }); td[2].append(share); }
          setText(share, ` (played ${Math.round(c.weight * 100)}%)`);
        } else td[2].querySelector(".share")?.remove();
        setText(td[3], fmt(c.performance)); setText(td[4], `${fmt(c.mu_before)} → ${fmt(c.mu_after)}`);
        setDelta(td[5], c.mu_before, c.mu_after); setText(td[6], fmt(c.display_rating));
      });
  };
  return view;
}

function rejectedView(ladder) {
  const note = el("p", { id: "rejected-info", class: "muted" });
  const list = table("rejected", ["when", "round", "reason", "field", "message"], []);
  const view = {};
  view.nodes = [el("p", {}, link(`← ${ladder} leaderboard`, ladderHash(ladder))),
    el("h1", { id: "rejected-name", text: `Rejected rounds of ${ladder}` }), note, list.root];
  view.throttleMs = REJECTED_REFRESH_MS;
  view.loadedAt = Date.now();
  view.load = () => api(`/api/ladders/${enc(ladder)}/rejected?limit=${REJECTED_SHOWN}`);
  view.patch = (data) => {
    setText(note, data.rejections.length === 0 ? "No rejected rounds." :
      `the ${data.rejections.length} most recent (newest first) of the dead-letter topic ${data.topic}`);
    patchRows(list.body, data.rejections, (x) => `${x.partition}/${x.offset}`,
      () => cells(el("tr", { class: "rejected-row" }), 5), (tr, x) => {
        const td = tr.children;
        setText(td[0], when(x.rejected_at)); setText(td[1], x.round_id ?? "–"); setText(td[2], x.reason);
        setText(td[3], x.field ?? "–"); setText(td[4], x.message);
      });
  };
  return view;
}

// Players mode: each player's probability of finishing first and expected rank (the ladder's model).
// Teams mode (Elo-MMR ladders): each picked player in a team with a share played; per team the same
// figures, and for two teams the three outcomes (first wins, draw, second wins).
function matchupView(ladder, segments) {
  const m = parseMatchup(segments);
  const input = el("input", { id: "matchup-player", type: "search", placeholder: "player id", autocomplete: "off" });
  const add = el("button", { id: "matchup-add", text: "add player" });
  const mode = el("input", { id: "matchup-teams-mode", type: "checkbox" });
  mode.checked = m.teams;
  const margin = el("input", { id: "matchup-margin", type: "number", min: "0", step: "10", value: String(m.margin),
    title: "draw margin: rating points within which two teams' performances count as a draw" });
  const picked = el("ul", { id: "matchup-players", class: "picked" });
  const note = el("p", { id: "matchup-info", class: "muted" });
  const bars = svg("svg", { class: "chart", id: "matchup-chart", role: "img", viewBox: `0 0 ${MATCHUP.width} ${MATCHUP.height}`,
    "aria-label": "probability of finishing first" });
  const odds = m.teams ? table("matchup", ["team", "players (share played)", "μ ± σ", "P(first)", "expected rank"], [2, 3, 4])
    : table("matchup", ["player", "μ ± σ", "P(first)", "expected rank"], [1, 2, 3]);
  const view = {};
  const go = () => { location.hash = matchupHash(ladder, m); };
  const addPlayer = () => {
    const id = input.value.trim();
    if (!id || m.picks.some((p) => p.player === id)) return;
    m.picks.push({ player: id, team: TEAM_NAMES[m.picks.length % 2], share: 1 }); go();
  };
  add.addEventListener("click", addPlayer);
  if (m.picks.length) setTimeout(() => input.focus());  // the view is rebuilt after each pick: keep typing
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") addPlayer(); });
  mode.addEventListener("change", () => {
    m.teams = mode.checked;
    m.picks.forEach((p, i) => { p.team = TEAM_NAMES[i % 2]; p.share = 1; });  // alternate A, B to start with
    go();
  });
  margin.addEventListener("change", () => { m.margin = Math.max(Number(margin.value) || 0, 0); go(); });
  const options = m.teams ? [el("label", {}, mode, " teams"), el("label", {}, " draw margin ", margin)] : [el("label", {}, mode, " teams")];
  view.nodes = [el("p", {}, link(`← ${ladder} leaderboard`, ladderHash(ladder))),
    el("h1", { id: "matchup-name", text: `Match-up in ${ladder}` }),
    el("div", { class: "toolbar" }, input, add, ...options), picked, note, bars, odds.root];

  // the teams present, in letter order, each with its picks
  const teams = () => Array.from(TEAM_NAMES).map((name) => ({ name, picks: m.picks.filter((p) => p.team === name) }))
    .filter((t) => t.picks.length > 0);
  view.load = async () => {
    const body = m.teams ? { teams: teams().map((t) => t.picks.map((p) => ({ player: p.player, weight: p.share }))), draw_margin: m.margin }
      : { players: m.picks.map((p) => p.player) };
    if ((m.teams ? body.teams : body.players).length < 2) return null;
    const resp = await fetch(`/api/ladders/${enc(ladder)}/predict`, { method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(body) });
    const answer = await resp.json();
    if (answer.error === "teams_unsupported") return { unsupported: answer.message };
    if (!resp.ok) throw new Error(answer.message || resp.statusText);
    return answer;
  };
  view.patch = (pred) => {
    patchRows(picked, m.picks, (p) => p.player, (p) => {
      const remove = el("button", { class: "remove", text: "×", title: "remove" });
      remove.addEventListener("click", () => { m.picks.splice(m.picks.indexOf(p), 1); go(); });
      if (!m.teams) return el("li", {}, el("span"), remove);
      const team = el("select", { class: "team", title: "team" },
        ...Array.from(TEAM_NAMES.slice(0, Math.max(2, m.picks.length)), (t) => el("option", { value: t, text: t })));
      team.value = p.team;
      team.addEventListener("change", () => { p.team = team.value; go(); });
      const share = el("input", { class: "share", type: "number", min: "0.05", max: "1", step: "0.05", value: String(p.share),
        title: "share of the match played" });
      share.addEventListener("change", () => { p.share = Math.min(Math.max(Number(share.value) || 1, 0.05), 1); go(); });
      return el("li", {}, el("span"), team, share, remove);
    }, (li, p) => setText(li.firstChild, p.player));
    const clear = (text) => { setText(note, text); bars.replaceChildren(); patchRows(odds.body, [], () => "", () => el("tr"), () => {}); };
    if (!pred) { clear(m.teams ? "Put players in at least two teams." : "Pick at least two players."); return; }
    if (pred.unsupported) { clear(pred.unsupported); return; }
    if (m.teams) { patchTeams(pred); return; }
    const meaning = pred.model.name === "trueskill" ? "TrueSkill's: the chance of a draw relative to equal players" : "1: every pair a coin flip";
    setText(note, `${pred.model.name}: match quality ${pred.quality.toFixed(2)} (${meaning}); ${pred.players[0].player} ahead of ` +
      `${pred.players[1].player}: ${(100 * pred.first_ahead_of_second).toFixed(1)} %` + unratedNote(pred));
    bars.replaceChildren(...matchupShapes(pred.players.map((p) => ({ label: p.player, key: { player: p.player }, p: p.win_probability }))));
    patchRows(odds.body, pred.players, (p) => p.player, () => cells(el("tr", { class: "matchup-row" }), 4, [1, 2, 3]), (tr, p) => {
      const td = tr.children;
      setLink(td[0], p.player + (p.known ? "" : " (unrated)"), playerHash(ladder, p.player));
      setText(td[1], `${fmt(p.mu)} ± ${fmt(p.sigma)}`); setText(td[2], pct(p.win_probability));
      setText(td[3], p.expected_rank.toFixed(2));
    });
  };
  const patchTeams = (pred) => {
    const names = teams().map((t) => t.name);  // pred.teams[k] is the k-th team sent
    const outcomes = pred.teams.length === 2 ? `; ${names[0]} wins ${pct(pred.first_wins)}, draw ${pct(pred.draw_probability)}, ` +
      `${names[1]} wins ${pct(pred.second_wins)}` : "";
    setText(note, `Elo-MMR for teams (a team is its share-weighted average member): match quality ${pred.quality.toFixed(2)}${outcomes}` +
      unratedNote(pred));
    const rows = pred.teams.map((t) => ({ label: `team ${names[t.team]}`, key: { team: names[t.team] }, p: t.win_probability }));
    const shapes = matchupShapes(rows);
    if (pred.teams.length === 2) shapes.push(...outcomeShapes(names, [pred.first_wins, pred.draw_probability, pred.second_wins]));
    bars.replaceChildren(...shapes);
    patchRows(odds.body, pred.teams, (t) => names[t.team], () => cells(el("tr", { class: "matchup-row" }), 5, [2, 3, 4]), (tr, t) => {
      const td = tr.children;
      setText(td[0], names[t.team]);
      setText(td[1], t.players.map((p) => p.player + (p.known ? "" : " (unrated)") + (p.weight < 1 ? ` (${fmt(100 * p.weight)}%)` : "")).join(", "));
      setText(td[2], `${fmt(t.mu)} ± ${fmt(t.sigma)}`); setText(td[3], pct(t.win_probability));
      setText(td[4], t.expected_rank.toFixed(2));
    });
  };
  return view;
}
const pct = (x) => `${(100 * x).toFixed(1)} %`;
// The players the ladder has not rated (a typo?), each with the rated ids that look like it: "" when none.
const unratedNote = (pred) => (pred.unrated || []).map((u) => `. Not rated in this ladder (predicted as a newcomer): ${u.player}` +
  (u.did_you_mean.length ? ` (did you mean ${u.did_you_mean.join(", ")}?)` : "")).join("");

// One bar per row ({label, key: data-* attributes, p}): its probability of finishing first. With two
// teams, the last line leaves room for the outcome bar.
function matchupShapes(rows) {
  const { width, height, pad } = MATCHUP;
  const step = (height - pad.top - pad.bottom) / (rows.length === 2 && rows[0].key.team ? 3 : rows.length);
  const out = [];
  rows.forEach((r, i) => {
    const y = pad.top + i * step;
    const label = svg("text", { x: pad.left - 6, y: y + step / 2 + 4, "text-anchor": "end" }); label.textContent = r.label; out.push(label);
    const data = Object.fromEntries(Object.entries(r.key).map(([k, v]) => [`data-${k}`, v]));
    const bar = svg("rect", { class: "win-bar", ...data, "data-p": r.p, x: pad.left, y: y + 2,
      width: r.p * (width - pad.left - pad.right), height: Math.max(step - 4, 1) });
    const tip = svg("title"); tip.textContent = `${r.label}: ${pct(r.p)} to finish first`; bar.append(tip);
    out.push(bar);
  });
  return out;
}

// Two teams: one bar split into "first wins", "draw", "second wins", widths in proportion.
function outcomeShapes(names, probs) {
  const { width, height, pad } = MATCHUP;
  const step = (height - pad.top - pad.bottom) / 3;
  const y = pad.top + 2 * step;
  const label = svg("text", { x: pad.left - 6, y: y + step / 2 + 4, "text-anchor": "end" }); label.textContent = "outcome";
  const out = [label];
  const what = [`${names[0]} wins`, "draw", `${names[1]} wins`];
  let x = pad.left;
  ["first", "draw", "second"].forEach((outcome, i) => {
    const w = probs[i] * (width - pad.left - pad.right);
    const rect = svg("rect", { class: `outcome outcome-${outcome}`, "data-outcome": outcome, "data-p": probs[i], x, y: y + 2,
      width: w, height: Math.max(step - 4, 1) });
    const tip = svg("title"); tip.textContent = `${what[i]}: ${pct(probs[i])}`; rect.append(tip);
    out.push(rect);
    x += w;
  });
  return out;
}

// ---- routing, refresh and live updates ------------------------------------------------
function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, "").split("/");
  const parts = raw.map(decode);
  if (parts[0] !== "l" || !parts[1]) return { kind: "home" };
  if (parts[2] === "p" && parts[3] !== undefined) return { kind: "player", ladder: parts[1], id: parts.slice(3).join("/") };
  if (parts[2] === "r" && parts[3] !== undefined) return { kind: "round", ladder: parts[1], id: parts.slice(3).join("/") };
  if (parts[2] === "rejected" && parts.length === 3) return { kind: "rejected", ladder: parts[1] };
  if (parts[2] === "what-if" && parts.length === 3) return { kind: "whatif", ladder: parts[1] };
  if (parts[2] === "seasons" && parts.length <= 4) return { kind: "seasons", ladder: parts[1], id: parts[3] || "" };
  if (parts[2] === "matchup") return { kind: "matchup", ladder: parts[1], id: raw.slice(3).filter((p) => p !== "") };
  return { kind: "ladder", ladder: parts[1] };
}

const VIEWS = { ladder: leaderboardView, player: playerView, round: roundView, rejected: rejectedView,
  matchup: matchupView, whatif: whatIfView, seasons: seasonsView };  // whatIfView: whatif.js; seasonsView: seasons.js

// Re-read the current view's data and patch it; a newer refresh wins over an older one still in flight.
async function refresh() {
  const view = state.view;
  if (!view) return;
  const ticket = ++state.ticket;
  state.loading = true;
  try {
    const data = await view.load();
    if (ticket !== state.ticket || view !== state.view) return;
    showError(null);
    if (view.notFound) { view.notFound = false; main.replaceChildren(...view.nodes); }  // it exists now
    view.patch(data);
  } catch (err) {
    if (ticket !== state.ticket || view !== state.view) return;
    if (err.status === 404 && /^unknown_/.test(err.code || "")) {  // no empty skeleton: say what is unknown
      view.notFound = true;
      showError(null);
      main.replaceChildren(el("p", { id: "not-found", class: "error", text: err.message }),
        el("p", {}, link("← all ladders", "#/")));
      return;
    }
    showError(err);
  } finally {
    if (ticket === state.ticket) state.loading = false;
  }
}

async function refreshLadders() {
  const { ladders } = await api("/api/ladders?limit=200");
  patchRows(select, ladders, (l) => l.ladder, (l) => el("option", { value: l.ladder }), (option, l) => setText(option, l.ladder));
  return ladders;
}

// Build the view of the current route (only when the route changed), then fill it.
async function render() {
  const route = parseRoute();
  try {
    const ladders = await refreshLadders();
    if (route.kind === "home") {
      if (ladders.length === 0) {  // look again until the first round is rated
        state.view = null;
        main.replaceChildren(el("p", { class: "muted", text: "No ladders yet." }));
        setTimeout(() => { if (parseRoute().kind === "home") render(); }, EMPTY_RETRY_MS);
        return;
      }
      location.hash = ladderHash(ladders[0].ladder);
      return;
    }
    const key = JSON.stringify(route);
    if (!state.view || state.view.key !== key) {
      showError(null);
      if (!state.view || state.view.ladder !== route.ladder) { state.offset = 0; state.search = ""; }
      const view = VIEWS[route.kind](route.ladder, route.id);
      Object.assign(view, { key, ladder: route.ladder });
      state.view = view;
      main.replaceChildren(...view.nodes);
    }
    select.value = route.ladder;
    subscribe(route.ladder);
    await refresh();
  } catch (err) {
    state.view = null;
    main.replaceChildren();
    showError(err);
  }
}

// A view with ``throttleMs`` (the rejected page reads Kafka) refreshes at most that often: an update
// in between is applied once the interval is over.
function onUpdate() {
  if (state.paused) { state.missed = true; setLive(); return; }
  const view = state.view;
  if (!view || !view.throttleMs) { refresh(); return; }
  const wait = view.throttleMs - (Date.now() - (view.loadedAt || 0));
  if (wait <= 0) { view.loadedAt = Date.now(); refresh(); return; }
  if (!view.timer) view.timer = setTimeout(() => { view.timer = null; onUpdate(); }, wait);
}

function subscribe(ladder) {
  if (state.paused && !state.events) return;  // started with ?live=off: no stream until resumed
  if (state.events && state.events.ladder === ladder) return;
  if (state.events) state.events.source.close();
  const source = new EventSource(`/api/ladders/${enc(ladder)}/events`);
  let first = true;  // the stream's first event is the state the view was just built from
  source.addEventListener("update", () => { state.connected = true; setLive(); if (!first) onUpdate(); first = false; });
  source.onerror = () => { state.connected = false; setLive(); };
  state.events = { ladder, source };
}

function setLive() {
  live.classList.toggle("on", Boolean(state.connected) && !state.paused);
  live.classList.toggle("paused", state.paused);
  live.title = state.paused ? "live updates paused" + (state.missed ? " (the ladder changed meanwhile)" : "")
    : "live updates (Server-Sent Events)";
  setText(pause, state.paused ? "resume live updates" : "pause live updates");
  setAttr(pause, "aria-pressed", String(state.paused));
}

pause.addEventListener("click", () => {
  state.paused = !state.paused;
  setLive();
  if (state.paused) {  // a refresh still in flight must not land after the pause: it is dropped (and shown on resume)
    if (state.loading) { state.ticket++; state.missed = true; }
    return;
  }
  const stale = state.missed || !state.events;  // started with ?live=off: nothing was followed yet
  if (!state.events && state.view) subscribe(state.view.ladder);
  state.missed = false;
  setLive();
  if (stale) refresh();
});
select.addEventListener("change", () => { location.hash = ladderHash(select.value); });
window.addEventListener("hashchange", render);
setLive();
render();

// What-if page (#/l/LADDER/what-if) and the explain panel of the player page. Loaded before app.js,
// whose helpers (el, api, table, cells, patchRows, setText, fmt, ...) these functions call when run.
"use strict";

// Standings typed or pasted: one player per line in finishing order ("alice"), or "rank player"
// ("1 alice", equal ranks tie), or a whole RoundResult-shaped JSON object.
function parseStandings(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) return JSON.parse(trimmed);
  const standings = [];
  trimmed.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "").forEach((line, i) => {
    const m = line.match(/^(\d+)[\s,;:.)]+(.+)$/);
    standings.push(m ? { player: m[2].trim(), rank: Number(m[1]) } : { player: line, rank: i + 1 });
  });
  return { standings };
}

async function postWhatIf(ladder, body) {
  const resp = await fetch(`/api/ladders/${encodeURIComponent(ladder)}/what-if`, {
    method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(body) });
  const answer = await resp.json();
  if (!resp.ok) throw new Error(`${answer.error}: ${answer.message}`);
  return answer;
}

function targetText(t) {
  if (!t.available) return `${t.player}: ${t.reason}`;
  const parts = [];
  if (t.next_tier) parts.push(t.rank_for_next ? `reaches ${t.next_tier} finishing #${t.rank_for_next}${t.tied_for_next ? " (tied)" : ""}` +
    (t.search === "bisect" ? " or better" : " at worst")
    : `cannot reach ${t.next_tier} in this round`);
  if (t.tier) parts.push(t.rank_to_keep ? `keeps ${t.tier} down to #${t.rank_to_keep}${t.tied_to_keep ? " (tied)" : ""}`
    : `leaves ${t.tier} whatever the rank`);
  return `${t.player}: ${parts.join("; ") || "no tier to reach"}`;
}

function whatIfView(ladder) {
  const input = el("textarea", { id: "whatif-input", rows: "10", spellcheck: "false",
    placeholder: "one player per line in finishing order, or \"rank player\" (equal ranks tie), or a RoundResult JSON" });
  const file = el("input", { id: "whatif-file", type: "file", accept: ".json,.txt,.csv" });
  const weight = el("input", { id: "whatif-weight", type: "number", step: "0.1", min: "0", value: "1" });
  const explainFor = el("input", { id: "whatif-explain", type: "text", placeholder: "players for tier targets (comma-separated)" });
  const run = el("button", { id: "whatif-run", type: "button", text: "what if?" });
  const note = el("p", { id: "whatif-info", class: "muted" });
  const targets = el("ul", { id: "whatif-targets" });
  const out = table("whatif-results", ["rank", "player", "performance", "μ before", "μ after", "change", "σ", "rating", "tier"],
    [0, 2, 3, 4, 5, 6, 7]);
  let body = null;  // the standings last asked about: a live update of the ladder asks again
  file.addEventListener("change", async () => { if (file.files[0]) { input.value = await file.files[0].text(); go(); } });
  run.addEventListener("click", () => go());
  function go() {
    let asked;
    try { asked = parseStandings(input.value); } catch (err) { showError(new Error(`not JSON: ${err.message}`)); return; }
    if (!asked.weight && Number(weight.value) > 0 && Number(weight.value) !== 1) asked.weight = Number(weight.value);
    const names = explainFor.value.split(",").map((s) => s.trim()).filter((s) => s !== "");
    if (names.length) asked.explain_for = names;
    body = asked;
    refresh();  // app.js: load() then patch(), errors shown above the view
  }
  function show(a) {
    setText(note, `${a.field_size} players rated from the live ratings as the stream would (${a.model}); nothing written ` +
      `· ${a.server_ms.toFixed(0)} ms`);
    patchRows(targets, a.targets, (t) => t.player, () => el("li", { class: "whatif-target" }), (li, t) => setText(li, targetText(t)));
    patchRows(out.body, a.changes, (c) => c.player, () => cells(el("tr", { class: "whatif-row" }), 9, [0, 2, 3, 4, 5, 6, 7]),
      (tr, c) => {
        const td = tr.children;
        setText(td[0], String(c.rank)); setLink(td[1], c.player + (c.known ? "" : " (new)"), playerHash(ladder, c.player));
        setText(td[2], fmt(c.performance)); setText(td[3], fmt(c.mu_before)); setText(td[4], fmt(c.mu_after));
        setDelta(td[5], c.mu_before, c.mu_after); setText(td[6], fmt(c.sigma_after));
        setText(td[7], fmt(c.display_rating) + (c.provisional ? "?" : ""));
        setText(td[8], (c.tier_before || "–") + (c.tier !== c.tier_before ? ` → ${c.tier || "–"}` : ""));
      });
  }
  const view = {};
  view.nodes = [el("p", {}, link(`← ${ladder} leaderboard`, ladderHash(ladder))),
    el("h1", { id: "whatif-name", text: `What if… (${ladder})` }),
    el("p", { class: "muted", text: "Paste a live scoreboard (complete or partial) or a hypothetical result: every player's rating change " +
      "if the round were rated now, asked again whenever the ladder's ratings change. Nothing is saved." }),
    input, el("div", { class: "toolbar" }, el("label", { text: "weight " }, weight), explainFor, file, run), note, targets, out.root];
  view.load = async () => (body ? postWhatIf(ladder, body) : null);
  view.patch = (a) => { if (a) show(a); };
  return view;
}

// The explain panel: a stored change of the player explained in plain words (and its numbers).
function explainPanel(ladder, playerId) {
  const title = el("h2", { id: "explain-title", text: "Why did my rating change?" });
  const hint = el("p", { class: "muted", text: "pick a round in the history below (“why?”)" });
  const list = el("ul", { id: "explain-text" });
  const root = el("section", { id: "explain-panel" }, title, hint, list);
  async function show(roundId) {
    try {
      const path = itemUrl(ladder, "player", playerId, "", `/changes/${encodeURIComponent(roundId)}/explain`);
      const e = await api(path);
      setText(title, `Why your rating changed in round ${roundId}`);
      hint.hidden = true;
      list.replaceChildren(...e.text.map((line) => el("li", { text: line })));
      root.scrollIntoView({ block: "nearest" });
    } catch (err) { showError(err); }
  }
  return { root, show };
}

// Seasons page (#/l/LADDER/seasons[/SEASON]) and the player page's seasons panel. Loaded before
// app.js, whose helpers (el, api, table, cells, patchRows, setText, fmt, when, ...) these call when run.
"use strict";

const seasonsHash = (ladder, season) => `#/l/${encodeURIComponent(ladder)}/seasons` +
  (season ? `/${encodeURIComponent(season)}` : "");

// The schedule, the league thresholds in effect, and one season's archived final standings
// (the selector: every scheduled season; the current one by default).
function seasonsView(ladder, season) {
  const picker = el("select", { id: "season-select" });
  picker.addEventListener("change", () => { location.hash = seasonsHash(ladder, picker.value); });
  const schedule = table("season-schedule", ["season", "starts (UTC)", ""], []);
  const leagues = table("season-leagues", ["league", "from rating", "players"], [1, 2]);
  const leaguesNote = el("p", { id: "season-leagues-note", class: "muted" });
  const standings = table("season-standings", ["#", "player", "rating", "μ", "σ", "league", "division"], [0, 2, 3, 4, 6]);
  const standingsNote = el("p", { id: "season-standings-note", class: "muted" });
  const view = {};
  view.nodes = [el("p", {}, link(`← ${ladder} leaderboard`, ladderHash(ladder))), el("h1", { text: `Seasons of ${ladder}` }),
    schedule.root, el("h2", { text: "Leagues by target share" }), leaguesNote, leagues.root,
    el("h2", {}, "Final standings of ", picker), standingsNote, standings.root];
  view.load = async () => {
    const seasons = await api(`/api/ladders/${enc(ladder)}/seasons`);
    const shown = season || seasons.current || (seasons.schedule.length ? seasons.schedule[seasons.schedule.length - 1].name : "");
    let archive = null;
    if (shown) {
      try { archive = await api(`/api/ladders/${enc(ladder)}/seasons/${enc(shown)}/leaderboard?limit=${PAGE_SIZE}`); }
      catch (err) { if (err.status !== 404) throw err; }
    }
    return { seasons, shown, archive };
  };
  view.patch = ({ seasons, shown, archive }) => {
    patchRows(picker, seasons.schedule, (s) => s.name, (s) => el("option", { value: s.name }), (o, s) => setText(o, s.name));
    picker.value = shown;
    patchRows(schedule.body, seasons.schedule, (s) => s.name, () => cells(el("tr", { class: "season-row" }), 3, []), (tr, s) => {
      setText(tr.children[0], s.name); setText(tr.children[1], s.start.replace("T", " ").slice(0, 16));
      setText(tr.children[2], s.name === seasons.current ? "current" : "");
    });
    const shares = seasons.leagues;
    setText(leaguesNote, shares ? `${shares.players} players, in effect from ${when(shares.at)}` :
      "no thresholds recomputed from target shares yet (stream season shares)");
    const rows = shares ? shares.leagues.map((name, i) => ({ name, from: shares.thresholds[i], count: shares.counts[i] })) : [];
    patchRows(leagues.body, rows, (r) => r.name, () => cells(el("tr"), 3, [1, 2]), (tr, r) => {
      setText(tr.children[0], r.name); setText(tr.children[1], r.from === null ? "–" : fmt(r.from, 1));
      setText(tr.children[2], String(r.count));
    });
    setText(standingsNote, !shown ? "the ladder has no seasons" : archive ? `${archive.total} players` :
      `season ${shown} is not archived (stream season archive ${ladder} ${shown})`);
    patchRows(standings.body, archive ? archive.rows : [], (r) => r.player,
      () => cells(el("tr", { class: "standing-row" }), 7, [0, 2, 3, 4, 6]), (tr, r) => {
        const td = tr.children;
        setText(td[0], String(r.rank)); setLink(td[1], r.player, playerHash(ladder, r.player));
        setText(td[2], fmt(r.display_rating)); setText(td[3], fmt(r.mu)); setText(td[4], fmt(r.sigma));
        setText(td[5], r.league || (r.tier || "–")); setText(td[6], r.division === null ? "–" : String(r.division));
      });
  };
  return view;
}

// The player's season now (placement, points with the bonus pool) and his past seasons.
function seasonsPanel(ladder, playerId) {
  const now = el("p", { id: "player-season" });
  const past = table("player-past-seasons", ["season", "rank", "rating", "league", "division"], [1, 2]);
  const root = el("section", { id: "player-seasons" }, el("h2", { text: "Seasons" }), now, past.root);
  function patch(s) {
    root.hidden = !s || (!s.season && s.past.length === 0);
    if (!s) return;
    setText(now, !s.season ? "" : `${s.season}: ${s.rounds} round${s.rounds === 1 ? "" : "s"}` +
      (s.placement ? " (placement)" : "") + (s.league_by_share ? ` · league by share ${s.league_by_share}` : "") +
      ` · points ${fmt(s.points)}` +
      (s.bonus_pool === null ? "" : ` (bonus taken ${fmt(s.bonus_taken)}, pool ${fmt(s.bonus_pool)})`));
    patchRows(past.body, s.past, (r) => r.season, () => cells(el("tr"), 5, [1, 2]), (tr, r) => {
      const td = tr.children;
      setLink(td[0], r.season, seasonsHash(ladder, r.season)); setText(td[1], String(r.rank));
      setText(td[2], fmt(r.display_rating)); setText(td[3], r.league || "–");
      setText(td[4], r.division === null ? "–" : String(r.division));
    });
  }
  return { root, patch, load: () => api(itemUrl(ladder, "player", playerId, "", "/seasons")) };
}

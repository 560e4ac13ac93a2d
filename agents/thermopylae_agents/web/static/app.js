// The page of `thermopylae web`: plain JavaScript, no framework, nothing fetched but this server's API.
// Everything the server sends is shown with textContent (never parsed as HTML).
"use strict";

// Watching: the page only times its calls of the server's step endpoints (advance, replay step); the
// server decides whose move it is and plays it.
const ui = { tab: "coop", options: null, game: null, replay: null, timer: null, paused: false, busy: false,
             lastStep: 0 };

function $(id) { return document.getElementById(id); }

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new Error("the server cannot be reached (" + err.message + ")");
  }
  let data = null;
  try { data = await response.json(); } catch (err) { data = null; }
  if (!response.ok) {
    throw new Error((data && data.error) || ("HTTP " + response.status));
  }
  return data;
}

async function guarded(work) {
  try {
    showError("");
    await work();
  } catch (err) {
    showError(err.message);
  }
}

function fillSelect(select, values, labels) {
  select.replaceChildren();
  values.forEach((value, k) => {
    const option = el("option", null, labels ? labels[k] : value);
    option.value = value;
    select.appendChild(option);
  });
}

function seedOf(input) {
  const text = input.value.trim();
  if (!text) return undefined;
  if (!/^[0-9]+$/.test(text)) throw new Error("the seed must be a whole number (or empty for a random one)");
  return Number(text);
}

// ------------------------------------------------------------------------------------------ set-up
function showTab(tab) {
  ui.tab = tab;
  for (const name of ["coop", "duel", "replay"]) {
    $("setup-" + name).hidden = name !== tab;
    $("tab-" + name).classList.toggle("active", name === tab);
  }
}

function coopSeatSelects() {
  const box = $("coop-seats");
  const count = Number($("coop-count").value);
  const kept = Array.from(box.querySelectorAll("select")).map((s) => s.value);
  box.replaceChildren();
  for (let k = 0; k < count; k++) {
    const label = el("label", "seat-choice", "Seat " + k + " ");
    const select = el("select");
    select.id = "seat-" + k;
    fillSelect(select, ["human", ...ui.options.agents.coop],
               ["person", ...ui.options.agents.coop]);
    if (kept[k]) select.value = kept[k];
    label.appendChild(select);
    box.appendChild(label);
  }
}

function duelSides() {
  for (const side of ["greek", "persian"]) {
    fillSelect($("duel-" + side), ["human", ...ui.options.agents[side]], ["person", ...ui.options.agents[side]]);
  }
  $("duel-persian").value = "heuristic";
}

async function startCoop() {
  const count = Number($("coop-count").value);
  const seats = [];
  for (let k = 0; k < count; k++) seats.push($("seat-" + k).value);
  const body = { game: "coop", seats };
  const seed = seedOf($("coop-seed"));
  if (seed !== undefined) body.seed = seed;
  const data = await api("POST", "/api/games", body);
  openGame(data);
}

async function startDuel() {
  const body = { game: "duel", greek: $("duel-greek").value, persian: $("duel-persian").value };
  const seed = seedOf($("duel-seed"));
  if (seed !== undefined) body.seed = seed;
  openGame(await api("POST", "/api/games", body));
}

function openGame(data) {
  clearTimeout(ui.timer);
  ui.paused = false;
  ui.replay = null;
  ui.game = { id: data.id, view: data.view };
  fillSelect($("hint-agent"), data.view.hint_agents);
  $("hint").replaceChildren();
  render();
}

async function openReplay(body) {
  clearTimeout(ui.timer);
  const data = await api("POST", "/api/replays", body);
  ui.paused = true;  // a replay is stepped by hand until Play
  ui.game = null;
  ui.replay = { id: data.id, view: data.view };
  render();
}

async function openUpload() {
  const file = $("replay-file").files[0];
  if (!file) throw new Error("choose a record file first");
  const text = await file.text();
  await openReplay({ text, name: file.name });
}

// ------------------------------------------------------------------------------------------ actions
async function play(action) {
  const data = await api("POST", "/api/games/" + ui.game.id + "/action", { action });
  ui.lastStep = performance.now();  // an agent's reply waits one interval after the person's move
  ui.game.view = data.view;
  $("hint").replaceChildren();
  render();
}

async function advance() {
  const game = ui.game;
  if (!game || game.view.to_move !== "agent") return;
  const data = await api("POST", "/api/games/" + game.id + "/advance", {});
  if (ui.game !== game) return;  // another game was opened meanwhile
  game.view = data.view;
  render();
}

// ------------------------------------------------------------------------------------------ watching
function speedDelay() {
  const speed = Number($("watch-speed").value);
  return speed > 0 ? 1000 / speed : 0;
}

function hasAgentMoves(view) {
  if (view.game === "coop") return view.seats.some((seat) => seat !== "human");
  return view.players[view.side] !== "human";
}

function canStep() {
  if (ui.game) return ui.game.view.to_move === "agent";
  if (ui.replay) return ui.replay.view.index < ui.replay.view.last;
  return false;
}

async function stepOnce() {
  if (ui.busy || !canStep()) return;
  ui.busy = true;
  ui.lastStep = performance.now();
  try {
    if (ui.game) await advance(); else await replayStep(ui.replay.view.index + 1);
  } finally {
    ui.busy = false;
  }
}

function schedule() {
  clearTimeout(ui.timer);
  ui.timer = null;
  if (ui.paused || !canStep()) return;
  // the time a move took on the server counts toward the wait: the speed is moves per second, not pauses
  const wait = Math.max(0, speedDelay() - (performance.now() - ui.lastStep));
  ui.timer = setTimeout(() => guarded(stepOnce), wait);
}

function drawWatch() {
  const current = ui.game || ui.replay;
  $("watch-box").hidden = !current || (ui.game !== null && !hasAgentMoves(current.view));
  $("watch-pause").textContent = ui.paused ? "Play" : "Pause";
  $("watch-step").disabled = !canStep();
  schedule();
}

async function askHint() {
  if (!ui.game) throw new Error("start a game first");
  const agent = $("hint-agent").value;
  const data = await api("POST", "/api/games/" + ui.game.id + "/hint", { agent });
  const box = $("hint");
  box.replaceChildren();
  if (data.search) {
    drawSearchHint(agent, data, box);
  } else if (data.probabilities) {
    const list = el("ol", "hint-list");
    for (const entry of data.probabilities) {
      list.appendChild(el("li", null, (100 * entry.p).toFixed(1) + "%  " + entry.label));
    }
    box.appendChild(el("p", null, agent + "'s most probable moves:"));
    box.appendChild(list);
  } else {
    box.appendChild(el("p", null, agent + " would play: " + data.choice_label));
  }
  document.querySelectorAll("button.action").forEach((button) => {
    button.classList.toggle("hinted", Number(button.dataset.action) === data.choice);
  });
}

// The search's estimate of each searched action: its win chance (the action, then the heuristic to the
// end) with the interval the server computed, and the rollouts behind it; the actions it left out, and why.
function drawSearchHint(agent, data, box) {
  const search = data.search;
  if (!search.searched.length) {
    box.appendChild(el("p", null, agent + " would play: " + data.choice_label +
                       " (the only action worth searching: no rollouts)"));
  } else {
    box.appendChild(el("p", null, agent + "'s estimated win chance per action (±" + search.z + " SE):"));
    const list = el("ul", "hint-list search-hint");
    for (const entry of search.searched) {
      const item = el("li", entry.action === data.choice ? "chosen" : (entry.dropped ? "dropped" : null));
      item.dataset.action = entry.action;
      const pct = (p) => (100 * p).toFixed(1) + "%";
      item.appendChild(el("span", "win", pct(entry.win) + " [" + pct(entry.low) + ", " + pct(entry.high) + "]"));
      item.appendChild(el("span", "small", " " + entry.rollouts + " rollouts" +
                          (entry.dropped ? ", dropped by the race" : "") +
                          (entry.action === data.choice ? ", chosen" : "")));
      item.appendChild(el("div", null, entry.label));
      list.appendChild(item);
    }
    box.appendChild(list);
  }
  for (const why of ["dominated", "beyond max_candidates"]) {
    const names = search.not_searched.filter((e) => e.why === why).map((e) => e.label.split("  ")[0]);
    if (names.length) box.appendChild(el("p", "small not-searched", "Not searched (" + why + "): " + names.join(", ")));
  }
}

async function replayStep(index) {
  const replay = ui.replay;
  const step = Math.max(0, Math.min(replay.view.last, index));
  const data = await api("GET", "/api/replays/" + replay.id + "?step=" + step);
  if (ui.replay !== replay) return;
  replay.view = data.view;
  render();
}

// ------------------------------------------------------------------------------------------ drawing
function persianCard(card, extra) {
  if (!card) return el("div", "card persian empty", "empty");
  const node = el("div", "card persian" + (extra ? " " + extra : ""));
  node.appendChild(el("span", "white-value", card.white));
  node.appendChild(el("span", "red-value", card.red));
  if (card.bonus) node.appendChild(el("span", "bonus", "★ bonus"));
  return node;
}

function zone(title, ...children) {
  const box = el("div", "zone");
  box.appendChild(el("h4", null, title));
  const row = el("div", "row");
  children.forEach((child) => row.appendChild(child));
  box.appendChild(row);
  return box;
}

function pile(label, count) {
  const node = el("div", "card back");
  node.appendChild(el("span", "count", count));
  node.appendChild(el("span", "small", label));
  return node;
}

function drawCoop(view, table) {
  const track = el("div", "track");
  for (let m = 1; m <= view.loss_marker; m++) {
    const cell = el("div", "cell" + (m === view.marker ? " marker" : "") + (m === view.loss_marker ? " loss" : ""));
    cell.appendChild(el("span", null, m));
    if (view.die_markers.includes(m)) cell.appendChild(el("span", "small", "+1 die"));
    if (m === view.loss_marker) cell.appendChild(el("span", "small", "defeat"));
    track.appendChild(cell);
  }
  table.appendChild(zone("Marker track", track));
  const line = el("div", "row");
  view.line.forEach((card, k) => {
    const slot = el("div", "slot");
    slot.appendChild(el("div", "small", "slot " + (k + 1)));
    slot.appendChild(persianCard(card));
    line.appendChild(slot);
  });
  table.appendChild(zone("Persian line (white: beat it, red: to the graveyard)", line));
  const support = el("div", "row");
  for (let k = 0; k < view.num_support; k++) {
    support.appendChild(el("div", "card support" + (k < view.support ? "" : " used"), k < view.support ? "S" : ""));
  }
  table.appendChild(zone("Support (" + view.support + " of " + view.num_support + ")", support));
  table.appendChild(zone("Decks", pile("Spartan deck", view.spartan_deck), pile("Persian deck", view.persian_deck),
                         pile("Persian discard", view.persian_discard.length)));
  const grave = el("div", "row graveyard");
  view.graveyard.forEach((card) => grave.appendChild(persianCard(card, "mini")));
  table.appendChild(zone("Graveyard " + view.graveyard.length + " / " + view.graveyard_win, grave));
  const hands = el("div", "hands");
  view.hands.forEach((hand, seat) => {
    const row = el("div", "hand" + (seat === view.current ? " acting" : ""));
    const who = view.seats ? (view.seats[seat] === "human" ? "person" : view.seats[seat]) : "";
    row.appendChild(el("div", "seat-name", "Seat " + seat + (who ? " (" + who + ")" : "") +
                       (seat === view.current ? " to act" : "")));
    const cards = el("div", "row");
    hand.forEach((value) => cards.appendChild(el("div", "card spartan", value)));
    if (!hand.length) cards.appendChild(el("span", "small", "no cards"));
    row.appendChild(cards);
    hands.appendChild(row);
  });
  table.appendChild(zone("Hands", hands));
}

function duelCards(cards, cls) {
  const row = el("div", "row");
  cards.forEach((card) => row.appendChild(el("div", "card duel kind-" + card.kind + (cls ? " " + cls : ""), card.text)));
  if (!cards.length) row.appendChild(el("span", "small", "none"));
  return row;
}

function drawDuel(view, table) {
  const tokens = el("div", "row tokens");
  for (let k = 0; k < view.start_tokens; k++) tokens.appendChild(el("span", "token" + (k < view.tokens ? "" : " lost")));
  table.appendChild(zone("Greek tokens " + view.tokens + " / " + view.start_tokens, tokens));
  const own = view.side === "greek" ? "Greek" : "Persian";
  const other = view.side === "greek" ? "Persian" : "Greek";
  const watched = Boolean(view.watched);  // two agents: both hands are shown, nothing is "yours"
  const yours = watched ? own : "Your";
  let hidden = el("div", "row");
  if (view.opponent_cards) {
    hidden = duelCards(view.opponent_cards);
  } else {
    for (let k = 0; k < view.opponent_hand; k++) hidden.appendChild(el("div", "card back small-card"));
  }
  table.appendChild(zone(other + " (" + (watched ? "" : "opponent: ") + view.opponent + "), hand of " +
                         view.opponent_hand, hidden, pile("deck", view.opponent_deck)));
  table.appendChild(zone(other + " discard pile", duelCards(view.opponent_discards, "mini")));
  table.appendChild(zone("Attack on the table" + (view.table.length ? " (total " + view.attack_total + ")" : ""),
                         duelCards(view.table)));
  if (view.build.length) {
    const row = el("div", "row");
    view.build.forEach((b) => row.appendChild(el("div", "card duel", (b.count > 1 ? b.count + " x " : "") + b.label)));
    table.appendChild(zone(yours + " " + (view.side === "persian" ? "attack" : "defence") + " so far (total " +
                           view.build_total + ")", row));
  }
  const player = watched ? view.players[view.side] : view.side;
  table.appendChild(zone(yours + " hand (" + player + ")", duelCards(view.hand), pile("deck", view.deck)));
  table.appendChild(zone(yours + " discard pile", duelCards(view.discards, "mini")));
}

function sideName(side) { return side ? side[0].toUpperCase() + side.slice(1) : "nobody"; }

function percent(p) { return p === null ? "-" : Math.round(100 * p) + "%"; }

function drawActions(view, box) {
  if (!view.legal.length) return;
  const odds = {};
  (view.odds || []).forEach((o) => { odds[o.action] = o; });
  box.appendChild(el("h3", null, view.game === "coop" ? "Seat " + view.current + ": your move" : "Your move"));
  const list = el("div", "actions");
  view.legal.forEach((entry) => {
    const button = el("button", "action");
    button.type = "button";
    button.dataset.action = entry.action;
    button.appendChild(el("span", "label", entry.label));
    const o = odds[entry.action];
    if (o) {
      const text = "slot 1: beat " + percent(o.beat1) + ", grave " + percent(o.kill1) +
        (o.beat2 === null ? "" : " · slot 2: beat " + percent(o.beat2) + ", grave " + percent(o.kill2));
      button.appendChild(el("span", "odds", text));
    }
    button.addEventListener("click", () => guarded(() => play(entry.action)));
    list.appendChild(button);
  });
  box.appendChild(list);
}

function statusLine(view) {
  const reason = view.reason ? " (" + view.reason + ")" : "";
  if (view.terminated && view.watched) return "GAME OVER: the " + sideName(view.winner) + "s won" + reason;
  if (view.terminated) return "GAME OVER: " + (view.won ? "won" : "lost") + reason;
  if (view.game === "coop") {
    const phase = { main: "retreat or fight", draw_offer: "a drawn card: give it or decline it",
                    discard: "seat " + view.recipient + " holds 6 cards: discard one" }[view.phase];
    return "Turn " + view.turn + " · seat " + view.current + " to act: " + phase;
  }
  return "Turn " + view.turn + " · " + view.phase;
}

function render() {
  const table = $("table");
  const controls = $("controls");
  table.replaceChildren();
  controls.replaceChildren();
  $("panel").hidden = false;
  const current = ui.game || ui.replay;
  drawWatch();
  if (!current) return;
  const view = current.view;
  table.appendChild(el("p", "status", statusLine(view)));
  table.dataset.game = view.game;
  if (view.game === "coop") drawCoop(view, table); else drawDuel(view, table);
  const log = $("log");
  log.replaceChildren();
  $("hint-box").hidden = !ui.game || view.terminated;
  if (ui.replay) {
    controls.appendChild(el("h3", null, "Replay of " + view.name));
    const nav = el("div", "row");
    const buttons = [["replay-first", "|◀ start", 0], ["replay-prev", "◀ back", view.index - 1],
                     ["replay-next", "forward ▶", view.index + 1], ["replay-last", "end ▶|", view.last]];
    buttons.forEach(([id, text, target]) => {
      const button = el("button", null, text);
      button.type = "button";
      button.id = id;
      button.addEventListener("click", () => guarded(() => replayStep(target)));
      nav.appendChild(button);
    });
    controls.appendChild(nav);
    controls.appendChild(el("p", null, "step " + view.index + " / " + view.last)).id = "replay-step";
    if (view.action_name) controls.appendChild(el("p", "small", "played: " + view.action_name));
    view.events.forEach((line) => log.appendChild(el("li", null, line)));
    return;
  }
  drawActions(view, controls);
  if (view.to_move === "agent") {
    const who = view.game === "coop" ? "Seat " + view.current + " (" + view.seats[view.current] + ") is"
      : "The " + sideName(view.side) + "s (" + view.players[view.side] + ") are";
    controls.appendChild(el("p", "thinking", who + (ui.paused ? " to move: Play or Step" : " thinking…")));
  }
  const link = el("a", "download", "Download the game record");
  link.href = "/api/games/" + ui.game.id + "/record";
  link.id = "download-record";
  controls.appendChild(link);
  view.log.slice().reverse().forEach((line) => log.appendChild(el("li", null, line)));
}

// ------------------------------------------------------------------------------------------ start
async function init() {
  ui.options = await api("GET", "/api/options");
  document.querySelectorAll("button.tab").forEach((button) => {
    button.addEventListener("click", () => showTab(button.dataset.tab));
  });
  $("coop-count").addEventListener("change", coopSeatSelects);
  $("watch-speed").addEventListener("change", schedule);
  $("watch-pause").addEventListener("click", () => { ui.paused = !ui.paused; render(); });
  $("watch-step").addEventListener("click", () => guarded(stepOnce));
  $("start-coop").addEventListener("click", () => guarded(startCoop));
  $("start-duel").addEventListener("click", () => guarded(startDuel));
  $("open-upload").addEventListener("click", () => guarded(openUpload));
  $("open-listed").addEventListener("click", () => guarded(() => openReplay({ listed: Number($("replay-listed").value) })));
  $("hint-button").addEventListener("click", () => guarded(askHint));
  if (ui.options.records.length) {
    fillSelect($("replay-listed"), ui.options.records.map((_, k) => String(k)), ui.options.records);
    $("listed-box").hidden = false;
  }
  coopSeatSelects();
  duelSides();
  showTab("coop");
  document.body.dataset.ready = "1";
}

document.addEventListener("DOMContentLoaded", () => guarded(init));

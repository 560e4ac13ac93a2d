// The page of `thermopylae web`: plain JavaScript, no framework, nothing fetched but this server's API.
// Everything the server sends is shown with textContent (never parsed as HTML).
"use strict";

// Each tab keeps its own game: ui.entries.coop, ui.entries.duel and ui.entries.replay are
// {id, view, paused, hint, selected}; the page draws the entry of the tab shown. Watching: the page only
// times its calls of the server's step endpoints (advance, replay step) for the entry shown; the server
// decides whose move it is and plays it.
const ui = { tab: "coop", options: null, entries: { coop: null, duel: null, replay: null }, timer: null,
             busy: false, lastStep: 0, search: "cold", movesOpen: null };

const PREPARING = "preparing the search (one-time, about a minute)…";

function $(id) { return document.getElementById(id); }

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function button(cls, text, onClick) {
  const node = el("button", cls, text);
  node.type = "button";
  if (onClick) node.addEventListener("click", onClick);
  return node;
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

function notice(message) { $("notice").textContent = message || ""; }

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

function shown() { return ui.entries[ui.tab]; }

function isSearch(spec) { return typeof spec === "string" && spec.split(":")[0] === "search"; }

// ------------------------------------------------------------------------------------------ set-up
function showTab(tab) {
  ui.tab = tab;
  for (const name of ["coop", "duel", "replay"]) {
    $("setup-" + name).hidden = name !== tab;
    $("tab-" + name).classList.toggle("active", name === tab);
    $("tab-" + name).setAttribute("aria-pressed", String(name === tab));
  }
  showError("");
  notice("");
  render();
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
    fillSelect(select, ["human", ...ui.options.agents.coop], ["person", ...ui.options.agents.coop]);
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
  openGame("coop", await api("POST", "/api/games", body));
}

async function startDuel() {
  const body = { game: "duel", greek: $("duel-greek").value, persian: $("duel-persian").value };
  const seed = seedOf($("duel-seed"));
  if (seed !== undefined) body.seed = seed;
  openGame("duel", await api("POST", "/api/games", body));
}

function replaceEntry(kind, entry) {
  const old = ui.entries[kind];
  ui.entries[kind] = entry;
  if (old) {  // the server holds a capped number of games: the one this tab no longer shows is freed
    const path = (kind === "replay" ? "/api/replays/" : "/api/games/") + old.id;
    if (kind !== "replay") api("DELETE", path).catch(() => {});
  }
}

function openGame(kind, data) {
  clearTimeout(ui.timer);
  replaceEntry(kind, { id: data.id, view: data.view, paused: false, hint: null, selected: null });
  if (ui.tab !== kind) showTab(kind); else render();
}

async function openReplay(body) {
  clearTimeout(ui.timer);
  const data = await api("POST", "/api/replays", body);
  // a replay is stepped by hand until Play
  replaceEntry("replay", { id: data.id, view: data.view, paused: true, hint: null, selected: null });
  render();
}

async function openUpload() {
  const file = $("replay-file").files[0];
  if (!file) throw new Error("choose a record file first");
  const text = await file.text();
  await openReplay({ text, name: file.name });
}

// ------------------------------------------------------------------------------------------ moves
function setView(entry, view) {
  entry.view = view;
  entry.hint = null;
  entry.selected = null;
  if (entry === shown()) render();
}

async function play(action) {
  const entry = shown();
  const data = await api("POST", "/api/games/" + entry.id + "/action", { action });
  ui.lastStep = performance.now();  // an agent's reply waits one interval after the person's move
  notice("");
  setView(entry, data.view);
}

async function advance(entry) {
  if (entry.view.to_move !== "agent") return;
  const data = await api("POST", "/api/games/" + entry.id + "/advance", {});
  if (entry.view.game === "coop" && isSearch(entry.view.seats[entry.view.current])) ui.search = "ready";
  setView(entry, data.view);  // drawn only if its tab is still shown
}

// A click on a card of a hand: its one legal action is played, several are offered in the bar, none says
// why (the server sends, for each card, the actions that play it or the reason there is none).
function clickCard(entry, key, card, name) {
  if (!card.actions.length) {
    entry.selected = null;
    render();
    notice(name + ": " + card.why);
    return;
  }
  if (card.actions.length === 1) {
    guarded(() => play(card.actions[0]));
    return;
  }
  entry.selected = entry.selected === key ? null : key;
  notice("");
  render();
  const first = document.querySelector("#choices button.choice");
  if (entry.selected && first) first.focus();
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

function canStep(entry) {
  if (!entry) return false;
  if (ui.tab === "replay") return entry.view.index < entry.view.last;
  return entry.view.to_move === "agent";
}

async function stepOnce() {
  const entry = shown();
  if (ui.busy || !canStep(entry)) return;
  ui.busy = true;
  ui.lastStep = performance.now();
  try {
    if (ui.tab === "replay") await replayStep(entry, entry.view.index + 1); else await advance(entry);
  } catch (err) {
    if (entry === ui.entries[ui.tab]) throw err;  // a game replaced meanwhile (and freed) is no error
  } finally {
    ui.busy = false;
  }
  schedule();
}

function schedule() {
  clearTimeout(ui.timer);
  ui.timer = null;
  const entry = shown();
  if (!entry || entry.paused || ui.busy || !canStep(entry)) return;
  // the time a move took on the server counts toward the wait: the speed is moves per second, not pauses
  const wait = Math.max(0, speedDelay() - (performance.now() - ui.lastStep));
  ui.timer = setTimeout(() => guarded(stepOnce), wait);
}

function drawWatch(entry) {
  const watchable = entry && (ui.tab === "replay" || hasAgentMoves(entry.view));
  $("watch-box").hidden = !watchable;
  $("watch-pause").textContent = entry && entry.paused ? "Play" : "Pause";
  $("watch-step").disabled = !canStep(entry);
  schedule();
}

// ------------------------------------------------------------------------------------------ hints
async function askHint() {
  const entry = shown();
  if (!entry || ui.tab === "replay") throw new Error("start a game first");
  const agent = $("hint-agent").value;
  const box = $("hint");
  box.replaceChildren();
  if (isSearch(agent)) {
    ui.search = (await api("GET", "/api/status")).search;
  }
  const preparing = isSearch(agent) && ui.search !== "ready";
  box.appendChild(el("p", "thinking", preparing ? "Preparing the search (one-time, about a minute)…"
                                                 : agent + " is thinking…"));
  $("hint-button").disabled = true;
  try {
    const data = await api("POST", "/api/games/" + entry.id + "/hint", { agent });
    if (isSearch(agent)) ui.search = "ready";
    entry.hint = { agent, data };
  } finally {
    $("hint-button").disabled = false;
  }
  if (entry === shown()) render();
}

function drawHint(entry) {
  const box = $("hint");
  box.replaceChildren();
  if (!entry.hint) return;
  const { agent, data } = entry.hint;
  if (data.search) {
    drawSearchHint(agent, data, box);
  } else if (data.probabilities) {
    const list = el("ol", "hint-list");
    for (const item of data.probabilities) {
      list.appendChild(el("li", null, (100 * item.p).toFixed(1) + "%  " + item.label));
    }
    box.appendChild(el("p", null, agent + "'s most probable moves:"));
    box.appendChild(list);
  } else {
    box.appendChild(el("p", null, agent + " would play: " + data.choice_label));
  }
  document.querySelectorAll("button.action, button.choice").forEach((node) => {
    node.classList.toggle("hinted", Number(node.dataset.action) === data.choice);
  });
  document.querySelectorAll("#board .card[data-actions]").forEach((node) => {
    node.classList.toggle("hinted", node.dataset.actions.split(",").map(Number).includes(data.choice));
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
    for (const item of search.searched) {
      const node = el("li", item.action === data.choice ? "chosen" : (item.dropped ? "dropped" : null));
      node.dataset.action = item.action;
      const pct = (p) => (100 * p).toFixed(1) + "%";
      node.appendChild(el("span", "win", pct(item.win) + " [" + pct(item.low) + ", " + pct(item.high) + "]"));
      node.appendChild(el("span", "small", " " + item.rollouts + " rollouts" +
                          (item.dropped ? ", dropped by the race" : "") +
                          (item.action === data.choice ? ", chosen" : "")));
      node.appendChild(el("div", null, item.label));
      list.appendChild(node);
    }
    box.appendChild(list);
  }
  for (const why of ["dominated", "beyond max_candidates"]) {
    const names = search.not_searched.filter((e) => e.why === why).map((e) => e.label.split("  ")[0]);
    if (names.length) box.appendChild(el("p", "small not-searched", "Not searched (" + why + "): " + names.join(", ")));
  }
}

async function replayStep(entry, index) {
  const step = Math.max(0, Math.min(entry.view.last, index));
  const data = await api("GET", "/api/replays/" + entry.id + "?step=" + step);
  setView(entry, data.view);
}

// ------------------------------------------------------------------------------------------ drawing
function persianCard(card, extra) {
  if (!card) return el("div", "card persian empty", "empty");
  const node = el("div", "card persian" + (extra ? " " + extra : ""));
  node.setAttribute("aria-label", "Persian card: white " + card.white + ", red " + card.red + (card.bonus ? ", bonus" : ""));
  node.appendChild(el("span", "white-value", card.white));
  node.appendChild(el("span", "red-value", card.red));
  if (card.bonus) node.appendChild(el("span", "bonus", "★ bonus"));
  return node;
}

// A zone of the table; ``area`` names its place in the two-column table of a wide screen (style.css).
function zone(area, title, ...children) {
  const box = el("section", "zone z-" + area);
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

// A card of a hand while a person is to move: a button (Tab reaches it, Enter or Space clicks it) that
// says what it does; a card with no legal action stays a button so that a click can say why.
function handCard(entry, cls, text, key, card, name) {
  const node = button("card " + cls + (card.actions.length ? " playable" : " idle"), text,
                      () => clickCard(entry, key, card, name));
  node.dataset.key = key;
  node.dataset.actions = card.actions.join(",");
  const selected = entry.selected === key;
  if (selected) node.classList.add("selected");
  node.setAttribute("aria-pressed", String(selected));
  const what = card.actions.length === 1 ? "click to play" : card.actions.length ? card.actions.length +
    " choices" : "not playable now";
  node.setAttribute("aria-label", name + ": " + what);
  return node;
}

function drawCoop(entry, view, board) {
  const track = el("div", "track");
  for (let m = 1; m <= view.loss_marker; m++) {
    const cell = el("div", "cell" + (m === view.marker ? " marker" : "") + (m === view.loss_marker ? " loss" : ""));
    cell.appendChild(el("span", null, m));
    if (view.die_markers.includes(m)) cell.appendChild(el("span", "small", "+1 die"));
    if (m === view.loss_marker) cell.appendChild(el("span", "small", "defeat"));
    track.appendChild(cell);
  }
  board.appendChild(zone("track", "Marker track", track));
  const line = el("div", "row");
  view.line.forEach((card, k) => {
    const slot = el("div", "slot");
    slot.appendChild(el("div", "small", "slot " + (k + 1)));
    slot.appendChild(persianCard(card));
    line.appendChild(slot);
  });
  board.appendChild(zone("line", "Persian line (white: beat it, red: to the graveyard)", line));
  const support = el("div", "row");
  for (let k = 0; k < view.num_support; k++) {
    support.appendChild(el("div", "card support" + (k < view.support ? "" : " used"), k < view.support ? "S" : ""));
  }
  board.appendChild(zone("support", "Support (" + view.support + " of " + view.num_support + ")", support));
  board.appendChild(zone("decks", "Decks", pile("Spartan deck", view.spartan_deck), pile("Persian deck", view.persian_deck),
                         pile("Persian discard", view.persian_discard.length)));
  const grave = el("div", "row graveyard");
  view.graveyard.forEach((card) => grave.appendChild(persianCard(card, "mini")));
  board.appendChild(zone("graveyard", "Graveyard " + view.graveyard.length + " / " + view.graveyard_win, grave));
  const hands = el("div", "hands");
  const gives = {};
  (view.legal || []).forEach((item) => {
    if (item.to !== undefined && item.to !== null) gives[item.to] = item.action;
  });
  view.hands.forEach((hand, seat) => {
    const row = el("div", "hand" + (seat === view.current ? " acting" : ""));
    row.dataset.seat = seat;
    const who = view.seats ? (view.seats[seat] === "human" ? "person" : view.seats[seat]) : "";
    const name = el("div", "seat-name", "Seat " + seat + (who ? " (" + who + ")" : "") +
                    (seat === view.current ? " to act" : ""));
    row.appendChild(name);
    const cards = el("div", "row");
    hand.forEach((value, k) => {
      const card = view.hand_play ? view.hand_play[seat][k] : null;
      if (card) {
        cards.appendChild(handCard(entry, "spartan", value, "c" + seat + "-" + k, card, "Seat " + seat + "'s " + value));
      } else {
        cards.appendChild(el("div", "card spartan", value));
      }
    });
    if (!hand.length) cards.appendChild(el("span", "small", "no cards"));
    row.appendChild(cards);
    if (gives[seat] !== undefined) {
      const give = button("give-here", "Give the draw to seat " + seat, () => guarded(() => play(gives[seat])));
      give.dataset.action = gives[seat];
      row.appendChild(give);
    }
    hands.appendChild(row);
  });
  board.appendChild(zone("hands", "Hands", hands));
}

function duelCards(cards, cls) {
  const row = el("div", "row");
  cards.forEach((card) => row.appendChild(el("div", "card duel kind-" + card.kind + (cls ? " " + cls : ""), card.text)));
  if (!cards.length) row.appendChild(el("span", "small", "none"));
  return row;
}

function drawDuel(entry, view, board) {
  const tokens = el("div", "row tokens");
  for (let k = 0; k < view.start_tokens; k++) tokens.appendChild(el("span", "token" + (k < view.tokens ? "" : " lost")));
  board.appendChild(zone("tokens", "Greek tokens " + view.tokens + " / " + view.start_tokens, tokens));
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
  const opponent = watched ? view.opponent : "opponent: " + view.opponent;
  board.appendChild(zone("opponent", other + " (" + opponent + "), hand of " + view.opponent_hand, hidden,
                         pile("deck", view.opponent_deck)));
  board.appendChild(zone("opponent-discards", other + " discard pile", duelCards(view.opponent_discards, "mini")));
  board.appendChild(zone("table", "Attack on the table" + (view.table.length ? " (total " + view.attack_total + ")" : ""),
                         duelCards(view.table)));
  if (view.build.length) {
    const row = el("div", "row");
    view.build.forEach((b) => row.appendChild(el("div", "card duel", (b.count > 1 ? b.count + " x " : "") + b.label)));
    board.appendChild(zone("build", yours + " " + (view.side === "persian" ? "attack" : "defence") + " so far (total " +
                           view.build_total + ")", row));
  }
  const player = watched ? view.players[view.side] : view.side;
  const hand = el("div", "row hand-cards");
  view.hand.forEach((card, k) => {
    const cls = "duel kind-" + card.kind + (card.added ? " added" : "");
    const playing = view.hand_play ? view.hand_play[k] : null;
    hand.appendChild(playing ? handCard(entry, cls, card.text, "d" + k, playing, card.text)
                             : el("div", "card " + cls, card.text));
  });
  if (!view.hand.length) hand.appendChild(el("span", "small", "none"));
  board.appendChild(zone("hand", yours + " hand (" + player + ")", hand, pile("deck", view.deck)));
  board.appendChild(zone("discards", yours + " discard pile", duelCards(view.discards, "mini")));
}

function sideName(side) { return side ? side[0].toUpperCase() + side.slice(1) : "nobody"; }

function percent(p) { return p === null ? "-" : Math.round(100 * p) + "%"; }

function oddsText(o) {
  return "slot 1: beat " + percent(o.beat1) + ", grave " + percent(o.kill1) +
    (o.beat2 === null ? "" : " · slot 2: beat " + percent(o.beat2) + ", grave " + percent(o.kill2));
}

function actionButton(cls, item, text, odds) {
  const node = button(cls, null, () => guarded(() => play(item.action)));
  node.dataset.action = item.action;
  node.appendChild(el("span", "label", text));
  if (odds && cls === "choice") {  // two short lines: the bar stays small on a phone
    node.appendChild(el("span", "odds", "slot 1: beat " + percent(odds.beat1) + ", grave " + percent(odds.kill1)));
    if (odds.beat2 !== null) {
      node.appendChild(el("span", "odds", "slot 2: beat " + percent(odds.beat2) + ", grave " + percent(odds.kill2)));
    }
  } else if (odds) {
    node.appendChild(el("span", "odds", oddsText(odds)));
  }
  return node;
}

function oddsOf(view) {
  const odds = {};
  (view.odds || []).forEach((o) => { odds[o.action] = o; });
  return odds;
}

// The bar above the table: the choices of the selected card, or the moves that play no card.
function drawChoices(entry, view) {
  const box = $("choices");
  box.replaceChildren();
  if (!view.legal || !view.legal.length) return;
  const odds = oddsOf(view);
  const selected = entry.selected ? document.querySelector('#board .card[data-key="' + entry.selected + '"]') : null;
  if (selected) {
    const actions = selected.dataset.actions.split(",").map(Number);
    const name = view.game === "coop" ? "Fight with " + selected.textContent : selected.textContent;
    box.appendChild(el("span", "choice-title", name + ":"));
    view.legal.filter((item) => actions.includes(item.action)).forEach((item) => {
      box.appendChild(actionButton("choice", item, item.short, odds[item.action]));
    });
    box.appendChild(button("choice-cancel", "Cancel", () => { entry.selected = null; render(); }));
    return;
  }
  const free = view.legal.filter((item) => item.card === null);
  free.forEach((item) => box.appendChild(actionButton("choice", item, item.short)));
  if (view.hand_play) box.appendChild(el("span", "small choice-help", free.length ? "or click a card" : "click a card to play it"));
}

// Every legal move as a button of its own, with its full name (for the keyboard and screen readers as much
// as the cards): open by default on a wide screen, folded on a phone, then as the person left it.
function drawActions(view, box) {
  if (!view.legal.length) return;
  const odds = oddsOf(view);
  const fold = el("details");
  fold.id = "all-moves";
  if (ui.movesOpen === null) ui.movesOpen = window.matchMedia("(min-width: 56rem)").matches;
  fold.open = ui.movesOpen;
  fold.addEventListener("toggle", () => { ui.movesOpen = fold.open; });
  const who = view.game === "coop" ? "Seat " + view.current + ": every move" : "Every move";
  fold.appendChild(el("summary", null, who + " (" + view.legal.length + ")"));
  const list = el("div", "actions");
  view.legal.forEach((item) => list.appendChild(actionButton("action", item, item.label, odds[item.action])));
  fold.appendChild(list);
  box.appendChild(fold);
}

function statusLine(view, replay) {
  if (view.terminated) {
    let line = "Game over · " + (view.ending || "");
    if (view.game === "duel" && !view.watched && !replay) line += view.won ? " You won." : " You lost.";
    return line;
  }
  if (view.game === "coop") {
    const phase = { main: "retreat or fight", draw_offer: "a drawn card: give it or decline it",
                    discard: "seat " + view.recipient + " holds 6 cards: discard one" }[view.phase];
    return "Turn " + view.turn + " · seat " + view.current + " to act: " + phase;
  }
  return "Turn " + view.turn + " · " + view.phase;
}

function outcomeClass(view, replay) {
  if (!view.terminated) return "";
  if (view.game === "duel" && (view.watched || replay)) return " over";
  return view.won ? " over won" : " over lost";
}

// What holds the keyboard focus is redrawn as a new element: the focus moves to its successor.
function focusKey() {
  const node = document.activeElement;
  if (!node || !node.closest || !node.closest("#layout")) return null;
  if (node.dataset.key) return '[data-key="' + node.dataset.key + '"]';
  if (node.dataset.action) return node.tagName.toLowerCase() + "." + node.className.split(" ")[0] +
    '[data-action="' + node.dataset.action + '"]';
  return node.id ? "#" + node.id : null;
}

function render() {
  const key = focusKey();
  const board = $("board");
  const controls = $("controls");
  const log = $("log");
  board.replaceChildren();
  controls.replaceChildren();
  log.replaceChildren();
  $("choices").replaceChildren();
  const entry = shown();
  drawWatch(entry);
  $("panel").hidden = !entry;
  if (!entry) {
    $("status").textContent = "";
    $("status").className = "status";
    board.appendChild(el("p", "placeholder", ui.tab === "replay" ? "Open a game record to replay it." :
                         ui.tab === "duel" ? "Choose the sides and start a duel." :
                         "Choose the seats and start a co-op game."));
    delete $("table").dataset.game;
    return;
  }
  const view = entry.view;
  const replay = ui.tab === "replay";
  $("status").textContent = statusLine(view, replay);
  $("status").className = "status" + outcomeClass(view, replay);
  $("table").dataset.game = view.game;
  if (view.game === "coop") drawCoop(entry, view, board); else drawDuel(entry, view, board);
  $("hint-box").hidden = replay || view.terminated;
  if (replay) {
    drawReplayControls(view, controls);
    $("log-title").textContent = "What happened at this step";
    view.events.forEach((line) => log.appendChild(el("li", null, line)));
    log.start = 1;
  } else {
    const agents = $("hint-agent");
    if (Array.from(agents.options).map((o) => o.value).join() !== view.hint_agents.join()) {
      fillSelect(agents, view.hint_agents);
    }
    drawChoices(entry, view);
    drawActions(view, controls);
    if (view.to_move === "agent") {
      const spec = view.game === "coop" ? view.seats[view.current] : view.players[view.side];
      const who = view.game === "coop" ? "Seat " + view.current + " (" + spec + ") is"
        : "The " + sideName(view.side) + "s (" + spec + ") are";
      const doing = entry.paused ? " to move: Play or Step"
        : (isSearch(spec) && ui.search !== "ready" ? " " + PREPARING : " thinking…");
      controls.appendChild(el("p", "thinking", who + doing));
    }
    const link = el("a", "download", "Download the game record");
    link.href = "/api/games/" + entry.id + "/record";
    link.id = "download-record";
    controls.appendChild(link);
    $("log-title").textContent = "What happened";
    // oldest first, numbered from the first line the server still keeps
    view.log.forEach((line) => log.appendChild(el("li", null, line)));
    log.start = view.log_start || 1;
    log.scrollTop = log.scrollHeight;
    drawHint(entry);
  }
  if (key) {
    const again = document.querySelector(key);
    if (again) again.focus();
  }
}

function drawReplayControls(view, controls) {
  controls.appendChild(el("h3", null, "Replay of " + view.name));
  const nav = el("div", "row");
  const buttons = [["replay-first", "|◀ start", 0], ["replay-prev", "◀ back", view.index - 1],
                   ["replay-next", "forward ▶", view.index + 1], ["replay-last", "end ▶|", view.last]];
  const entry = shown();
  buttons.forEach(([id, text, target]) => {
    const node = button(null, text, () => guarded(() => replayStep(entry, target)));
    node.id = id;
    nav.appendChild(node);
  });
  controls.appendChild(nav);
  controls.appendChild(el("p", null, "step " + view.index + " / " + view.last)).id = "replay-step";
  if (view.action_name) controls.appendChild(el("p", "small", "played: " + view.action_name));
}

// ------------------------------------------------------------------------------------------ start
async function init() {
  ui.options = await api("GET", "/api/options");
  ui.search = (await api("GET", "/api/status")).search;
  document.querySelectorAll("button.tab").forEach((node) => {
    node.addEventListener("click", () => showTab(node.dataset.tab));
  });
  $("coop-count").addEventListener("change", coopSeatSelects);
  $("watch-speed").addEventListener("change", schedule);
  $("watch-pause").addEventListener("click", () => {
    const entry = shown();
    if (entry) { entry.paused = !entry.paused; render(); }
  });
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

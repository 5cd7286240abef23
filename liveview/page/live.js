// FreqLens live view: polls /live/series, /live/forecast and /online and
// draws four canvases by hand. After each draw every canvas carries
// data-* attributes (points, parts, frequencies, and data-drawn-pixels: the
// pixels the data changed, counted with getImageData) that the browser test
// reads from the DOM.
"use strict";

const POLL_MS = 1000;        // forecast and /online
const LIST_EVERY = 5;        // polls between refreshes of the series list
const RESIDUAL = "#9aa3ad", READINGS = "#1d2330", FORECAST = "#d9480f", LEVEL = "#5f6b7a", OTHER = "#c9ced6";

const $ = (id) => document.getElementById(id);
const state = { series: "", field: 0, list: [], forecast: null, online: null, polls: 0, without: new Set() };

// colourOf gives each rhythm ("r" + its index) and each free frequency (its
// id) its own colour, the same in every plot and on every load of the page:
// rhythm k takes the palette's k-th colour (the model lists its rhythms
// strongest first), a free frequency a muted golden-angle hue of its id. A
// rhythm's frequencies take their rhythm's colour.
const PALETTE = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#3b4cc0", "#7f7f00", "#00796b"];
function colourOf(id) {
  const hue = (n, sat, light) => "hsl(" + Math.round((n * 137.508) % 360) + ", " + sat + "%, " + light + "%)";
  if (typeof id === "string" && id.startsWith("r")) {
    const k = Number(id.slice(1));
    return k < PALETTE.length ? PALETTE[k] : hue(k, 55, 45);
  }
  return hue(Number(id) + 0.5, 30, 62);
}

// periodName names a period as the CLI does ("24h", "7d", "12.5h"), from
// seconds, or from steps when the cadence is unknown.
function periodName(seconds, steps) {
  const f = (x, unit) => (Math.round(x * 10) / 10).toFixed(1).replace(/\.0$/, "") + unit;
  if (!(seconds > 0)) return f(steps, " steps");
  if (seconds >= 72 * 3600) return f(seconds / 86400, "d");
  if (seconds >= 3600) return f(seconds / 3600, "h");
  if (seconds >= 60) return f(seconds / 60, "m");
  return f(seconds, "s");
}

// --- drawing helpers -------------------------------------------------------

// setup sizes a canvas to its box and returns its context and plot area.
function setup(canvas, pad) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(50, canvas.clientWidth), h = Math.max(50, canvas.clientHeight);
  canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.font = "11px system-ui, sans-serif";
  pad = pad || { l: 52, r: 12, t: 8, b: 22 };
  return { ctx, w, h, x0: pad.l, x1: w - pad.r, y0: pad.t, y1: h - pad.b };
}

// pixels returns a copy of the canvas' pixels; changed counts the pixels
// that differ between two copies.
function pixels(canvas) { return canvas.getContext("2d", { willReadFrequently: true }).getImageData(0, 0, canvas.width, canvas.height).data; }
function changed(a, b) {
  let n = 0;
  for (let i = 0; i < a.length; i += 4) {
    if (a[i] !== b[i] || a[i + 1] !== b[i + 1] || a[i + 2] !== b[i + 2] || a[i + 3] !== b[i + 3]) n++;
  }
  return n;
}

// niceTicks returns about n round numbers spanning [lo, hi].
function niceTicks(lo, hi, n) {
  if (!(hi > lo)) { hi = lo + 1; }
  const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

function fmtNum(v) {
  const a = Math.abs(v);
  if (a >= 1e4 || (a > 0 && a < 1e-2)) return v.toExponential(1);
  return String(Math.round(v * 100) / 100);
}

function fmtTime(ms, stepSeconds) {
  const d = new Date(ms), p = (x) => String(x).padStart(2, "0");
  const day = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][d.getDay()];
  if (stepSeconds >= 86400) return day + " " + d.getDate() + "/" + (d.getMonth() + 1);
  if (stepSeconds >= 60) return day + " " + p(d.getHours()) + ":" + p(d.getMinutes());
  return p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds());
}

// axes draws the frame, the y grid with labels and the x labels.
function axes(g, ylo, yhi, xticks) {
  const { ctx } = g;
  ctx.strokeStyle = "#d8dde4"; ctx.fillStyle = "#5f6b7a"; ctx.lineWidth = 1;
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  for (const v of niceTicks(ylo, yhi, 5)) {
    const y = g.sy(v);
    if (y < g.y0 - 1 || y > g.y1 + 1) continue;
    ctx.beginPath(); ctx.moveTo(g.x0, y + 0.5); ctx.lineTo(g.x1, y + 0.5); ctx.stroke();
    ctx.fillText(fmtNum(v), g.x0 - 6, y);
  }
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  for (const [x, label] of xticks) {
    ctx.beginPath(); ctx.moveTo(x + 0.5, g.y1); ctx.lineTo(x + 0.5, g.y1 + 4); ctx.stroke();
    ctx.fillText(label, x, g.y1 + 6);
  }
  ctx.strokeStyle = "#aab3be";
  ctx.strokeRect(g.x0 + 0.5, g.y0 + 0.5, g.x1 - g.x0, g.y1 - g.y0);
}

function scales(g, xlo, xhi, ylo, yhi) {
  const span = yhi - ylo || 1;
  ylo -= span * 0.05; yhi += span * 0.05;
  g.ylo = ylo; g.yhi = yhi;
  g.sx = (x) => g.x0 + (x - xlo) / ((xhi - xlo) || 1) * (g.x1 - g.x0);
  g.sy = (y) => g.y1 - (y - ylo) / (yhi - ylo) * (g.y1 - g.y0);
}

// timeTicks puts about six labels on round times (whole hours, days, …,
// in the browser's time zone) between t0 and t1 (milliseconds).
function timeTicks(g, t0, t1) {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800, 2592000];
  const span = (t1 - t0) / 1000;
  const step = (steps.find((s) => span / s <= 7) || span / 6) * 1000;
  const off = -new Date(t0).getTimezoneOffset() * 60000; // align to local midnight
  const out = [];
  for (let t = Math.ceil((t0 + off) / step) * step - off; t <= t1; t += step) out.push([g.sx(t), fmtTime(t, step / 1000)]);
  return out;
}

function polyline(ctx, xs, ys, colour, width, dash) {
  ctx.strokeStyle = colour; ctx.lineWidth = width; ctx.setLineDash(dash || []);
  ctx.beginPath();
  let pen = false, n = 0;
  for (let i = 0; i < xs.length; i++) {
    if (ys[i] === null || !isFinite(ys[i])) { pen = false; continue; }
    if (pen) ctx.lineTo(xs[i], ys[i]); else ctx.moveTo(xs[i], ys[i]);
    pen = true; n++;
  }
  ctx.stroke(); ctx.setLineDash([]);
  return n;
}

// legend lists items [label, colour, line, key, off]; an item with a key
// toggles it (onToggle) when clicked, and an item that is off is struck
// through.
function legend(el, items, onToggle) {
  el.replaceChildren(...items.map(([label, colour, line, key, off]) => {
    const s = document.createElement("span");
    s.textContent = label; s.style.setProperty("--c", colour);
    if (line) s.className = "line";
    if (key !== undefined && onToggle) {
      s.classList.add("toggle");
      if (off) s.classList.add("off");
      s.dataset.key = key;
      s.title = off ? "click to put it back" : "click to see the forecast without it";
      s.addEventListener("click", () => onToggle(key));
    }
    return s;
  }));
}

function message(g, text) {
  g.ctx.fillStyle = "#5f6b7a"; g.ctx.textAlign = "center"; g.ctx.textBaseline = "middle";
  g.ctx.fillText(text, (g.x0 + g.x1) / 2, (g.y0 + g.y1) / 2);
}

// --- the plots -----------------------------------------------------------

// drawForecast: the window's readings, the forecast and its intervals.
function drawForecast(f, c) {
  const canvas = $("plot-forecast"), g = setup(canvas);
  const cad = f.cadence_seconds * 1000, ts = Date.parse(f.ts);
  const read = f.readings[c], fc = f.forecast[c];
  const tr = read.map((_, j) => ts - (read.length - 1 - j) * cad);
  const tf = fc.map((_, h) => ts + (h + 1) * cad);
  const bands = (f.intervals || []).slice().sort((a, b) => b.level - a.level); // widest first
  let lo = Infinity, hi = -Infinity;
  const grow = (v) => { if (v !== null && isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } };
  read.forEach(grow); fc.forEach(grow);
  bands.forEach((b) => { b.lower[c].forEach(grow); b.upper[c].forEach(grow); });
  if (!isFinite(lo)) { lo = 0; hi = 1; }
  scales(g, tr[0], tf[tf.length - 1], lo, hi);
  axes(g, g.ylo, g.yhi, timeTicks(g, tr[0], tf[tf.length - 1]));
  const { ctx } = g;
  // "now": the forecast origin.
  ctx.strokeStyle = "#aab3be"; ctx.setLineDash([3, 3]);
  ctx.beginPath(); ctx.moveTo(g.sx(ts) + 0.5, g.y0); ctx.lineTo(g.sx(ts) + 0.5, g.y1); ctx.stroke(); ctx.setLineDash([]);

  let before = pixels(canvas);
  // Widest band first (bands is sorted so), each narrower one over it: the
  // area of band k alone is covered by bands 0 … k, so its shade (the
  // legend's swatch) is 1 − (1 − alpha)^(k+1).
  const alpha = 0.15, shade = bands.map((_, k) => 1 - Math.pow(1 - alpha, k + 1));
  for (let k = 0; k < bands.length; k++) {
    const b = bands[k];
    ctx.fillStyle = FORECAST; ctx.globalAlpha = alpha;
    ctx.beginPath();
    tf.forEach((t, h) => { const x = g.sx(t), y = g.sy(b.upper[c][h]); if (h) ctx.lineTo(x, y); else ctx.moveTo(x, y); });
    for (let h = tf.length - 1; h >= 0; h--) ctx.lineTo(g.sx(tf[h]), g.sy(b.lower[c][h]));
    ctx.closePath(); ctx.fill(); ctx.globalAlpha = 1;
  }
  let after = pixels(canvas);
  canvas.dataset.bandPixels = bands.length ? changed(before, after) : 0;
  canvas.dataset.bands = bands.length;

  before = after;
  const nr = polyline(ctx, tr.map(g.sx), read.map((v) => v === null ? null : g.sy(v)), READINGS, 1.5);
  const last = read[read.length - 1];
  const nf = polyline(ctx, [ts, ...tf].map(g.sx), [last, ...fc].map((v) => v === null ? null : g.sy(v)), FORECAST, 2);
  after = pixels(canvas);
  canvas.dataset.points = nr;
  canvas.dataset.forecastPoints = Math.max(0, nf - 1);
  canvas.dataset.drawnPixels = changed(before, after);

  const items = [["readings (" + read.length + " steps)", READINGS, true], ["forecast (" + fc.length + " steps)", FORECAST, true]];
  bands.forEach((b, k) => items.push([Math.round(b.level * 100) + "% interval", "rgba(217, 72, 15, " + shade[k].toFixed(2) + ")"]));
  legend($("legend-forecast"), items);
}

// drawParts stacks the forecast's parts on the window's level (or on zero
// when the level is unknown): positive parts above it, negative parts below
// it, step by step, so the areas add up to the forecast.
function drawParts(f, c) {
  const canvas = $("plot-parts"), g = setup(canvas);
  if (!f.residual) {
    message(g, "this service writes no attributions, so the forecast has no parts to show");
    canvas.dataset.parts = 0; canvas.dataset.drawnPixels = 0;
    legend($("legend-parts"), []);
    return;
  }
  const H = f.horizon, cad = f.cadence_seconds * 1000, ts = Date.parse(f.ts);
  const base = f.level ? f.level[c] : 0;
  // One layer per rhythm (a cycle of the data with its harmonics: "24h
  // cycle"), the frequencies of no rhythm together ("other frequencies"),
  // and the residual; a rhythm's frequencies are listed as its detail.
  const parts = [], detail = [];
  const rhythms = f.rhythms || [];
  for (const r of rhythms) {
    const v = r.values[c];
    if (!v.some((x) => x !== 0)) continue;
    parts.push({ label: periodName(r.period_seconds, r.period_steps) + " cycle", colour: colourOf("r" + r.index), v, share: r.share });
    const members = f.parts.filter((p) => p.rhythm === r.index).sort((a, b) => b.share - a.share);
    // A cycle's share is what its lines add up to; their own shares, on the
    // same footing, sum to more when they partly cancel, so the lines are
    // listed by their size within the cycle.
    const lines = members.reduce((s, p) => s + p.share, 0);
    if (members.length > 1 && lines > 0) detail.push(periodName(r.period_seconds, r.period_steps) + " cycle, its frequencies by size: " +
      members.map((p) => periodName(p.period_seconds, p.period_steps) + " " + Math.round(p.share / lines * 100) + "%").join(", ") +
      (lines - r.share >= 0.005 ? " (on their own " + Math.round(lines * 100) + "%; they partly cancel)" : ""));
  }
  const free = f.parts.filter((p) => p.rhythm === undefined);
  if (free.length) {
    const v = new Array(H).fill(0);
    for (const p of free) p.values[c].forEach((x, h) => { v[h] += x; });
    if (v.some((x) => x !== 0)) parts.push({ label: "other frequencies", colour: OTHER, v, share: free.reduce((s, p) => s + p.share, 0) });
  }
  parts.sort((a, b) => b.share - a.share);
  // The parts toggled off: the forecast without them is the forecast less
  // exactly their values (the attribution is faithful to removal), drawn
  // dashed; their layers are left out.
  const off = parts.filter((p) => state.without.has(p.label));
  const without = f.forecast[c].map((y, h) => off.reduce((s, p) => s - (p.v[h] || 0), y));
  const shown = parts.filter((p) => !state.without.has(p.label));
  // A model with the channel mix computes each field's residual from every
  // field's leftover: its label says so.
  const residual = f.residual_all_channels ? "residual (all channels)" : "residual";
  shown.push({ label: residual + (f.level ? " (level removed)" : ""), colour: RESIDUAL, v: f.residual[c].map((x) => x - base) });
  canvas.dataset.residual = residual;
  // Stack: pos[h] and neg[h] are the running tops above and below the base.
  const pos = new Array(H).fill(base), neg = new Array(H).fill(base);
  const layers = shown.map((p) => {
    const lo = new Array(H), hi = new Array(H);
    for (let h = 0; h < H; h++) {
      const x = p.v[h] || 0;
      if (x >= 0) { lo[h] = pos[h]; pos[h] += x; hi[h] = pos[h]; } else { hi[h] = neg[h]; neg[h] += x; lo[h] = neg[h]; }
    }
    return { p, lo, hi };
  });
  const lo = Math.min(...neg, ...f.forecast[c], ...without), hi = Math.max(...pos, ...f.forecast[c], ...without);
  const t = Array.from({ length: H }, (_, h) => ts + (h + 1) * cad);
  scales(g, t[0] - cad / 2, t[H - 1] + cad / 2, lo, hi);
  axes(g, g.ylo, g.yhi, timeTicks(g, t[0] - cad / 2, t[H - 1] + cad / 2));
  const { ctx } = g;
  const before = pixels(canvas);
  // Each step's stack spans the step's width, so a part that changes sign
  // between steps moves from above the base to below it without slivers.
  for (const { p, lo, hi } of layers) {
    ctx.fillStyle = p.colour;
    for (let h = 0; h < H; h++) {
      const xa = Math.round(g.sx(t[h] - cad / 2)), xb = Math.round(g.sx(t[h] + cad / 2));
      const ya = g.sy(hi[h]), yb = g.sy(lo[h]);
      if (yb - ya > 0) ctx.fillRect(xa, ya, xb - xa, yb - ya);
    }
  }
  canvas.dataset.drawnPixels = changed(before, pixels(canvas)); // the areas alone
  if (f.level) polyline(ctx, t.map(g.sx), t.map(() => g.sy(base)), LEVEL, 1, [4, 3]);
  polyline(ctx, t.map(g.sx), f.forecast[c].map((v) => g.sy(v)), "#000000", 2);
  if (off.length) polyline(ctx, t.map(g.sx), without.map((v) => g.sy(v)), FORECAST, 2, [6, 4]);
  canvas.dataset.parts = layers.length;
  canvas.dataset.cycles = shown.filter((p) => p.label.endsWith(" cycle")).length;
  canvas.dataset.cycleColours = parts.filter((p) => p.label.endsWith(" cycle")).map((p) => p.label + "=" + p.colour).join(";");
  canvas.dataset.without = off.map((p) => p.label).join(";");
  canvas.dataset.withoutFirst = off.length ? String(without[0]) : "";
  const items = parts.map((p) => [p.label + (p.share !== undefined ? " " + Math.round(p.share * 100) + "%" : ""), p.colour, false, p.label, state.without.has(p.label)]);
  items.push([shown[shown.length - 1].label, RESIDUAL]);
  if (f.level) items.push(["level " + fmtNum(base), LEVEL, true]);
  items.push(["forecast", "#000000", true]);
  if (off.length) items.push(["forecast without " + off.map((p) => p.label).join(", "), FORECAST, true]);
  legend($("legend-parts"), items, (key) => {
    if (state.without.has(key)) state.without.delete(key); else state.without.add(key);
    writeHash();
    drawParts(f, c);
  });
  $("detail-parts").textContent = detail.join("; ");
}

// drawSpectrum: one bar per frequency (largest share first, at most 12),
// its period, share and drift ratio.
function drawSpectrum(online, cadenceSeconds) {
  const canvas = $("plot-spectrum"), g = setup(canvas, { l: 120, r: 110, t: 6, b: 6 });
  const fs = ((online && online.frequencies) || []).filter((q) => q.share > 0).sort((a, b) => b.share - a.share).slice(0, 12);
  canvas.dataset.frequencies = fs.length;
  if (!fs.length) { message(g, "no frequency has a share yet"); canvas.dataset.drawnPixels = 0; return; }
  const { ctx } = g, row = (g.y1 - g.y0) / fs.length, top = fs[0].share;
  const before = pixels(canvas);
  fs.forEach((q, i) => {
    const y = g.y0 + i * row, bh = Math.max(2, row * 0.7), w = (g.x1 - g.x0) * q.share / top;
    ctx.fillStyle = q.rhythm !== undefined ? colourOf("r" + q.rhythm) : colourOf(q.id);
    ctx.fillRect(g.x0, y + (row - bh) / 2, Math.max(1, w), bh);
  });
  canvas.dataset.drawnPixels = changed(before, pixels(canvas));
  ctx.textBaseline = "middle";
  fs.forEach((q, i) => {
    const y = g.y0 + (i + 0.5) * row;
    ctx.fillStyle = "#1d2330"; ctx.textAlign = "right";
    ctx.font = (q.dominant ? "bold " : "") + "11px system-ui, sans-serif";
    // Only a rhythm is a cycle: its frequencies are named with it.
    const rh = ((online && online.rhythms) || []).find((r) => r.index === q.rhythm);
    const name = periodName(q.period_steps * cadenceSeconds, q.period_steps);
    let label = name;
    if (rh) {
      const cycle = periodName(rh.period_steps * cadenceSeconds, rh.period_steps) + " cycle";
      label = name + " (" + cycle + ")"; // a line of the cycle, not the cycle
    }
    ctx.fillText(label, g.x0 - 6, y);
    ctx.textAlign = "left"; ctx.font = "11px system-ui, sans-serif"; ctx.fillStyle = "#5f6b7a";
    const drift = Math.abs(q.drift_ratio) < 5e-4 ? 0 : q.drift_ratio * 100; // no "-0.0%"
    ctx.fillText(Math.round(q.share * 1000) / 10 + "%  drift " + (drift >= 0 ? "+" : "") + drift.toFixed(1) + "%", g.x1 + 6, y);
  });
}

// drawIntervals: each level's recent coverage beside its interval score
// and width, which show a band too wide where coverage cannot.
function drawIntervals(online) {
  const p = $("intervals-error"), ivs = ((online && online.intervals) || []).filter((c) => c.scored > 0);
  p.dataset.levels = ivs.length;
  p.textContent = ivs.map((c) => Math.round(c.level * 100) + "% intervals: held " + (c.recent * 100).toFixed(1) +
    "% · interval score " + c.recent_score.toFixed(3) + " · width " + c.recent_width.toFixed(3)).join("; ") +
    (ivs.length ? " (recent, in units of each series' scale; a lower score is better: the width plus 2/(1 − level) × how far values fell outside)" : "");
}

// drawError: the rolling MSE of each horizon bucket ("all" first, grey).
function drawError(online) {
  const canvas = $("plot-error"), g = setup(canvas);
  const bs = (online && online.horizon) || [];
  canvas.dataset.buckets = bs.length;
  if (!bs.length) { message(g, "waiting for realised values to score the forecasts"); canvas.dataset.drawnPixels = 0; return; }
  const top = Math.max(...bs.map((b) => b.mse));
  const slot = (g.x1 - g.x0) / bs.length;
  scales(g, 0, 1, 0, top);
  g.sx = (i) => g.x0 + (i + 0.5) * slot;
  g.sy = (y) => g.y1 - y / (g.yhi || 1) * (g.y1 - g.y0);
  axes(g, 0, g.yhi, bs.map((b, i) => [g.sx(i), b.bucket === "all" ? "all steps" : "steps " + b.bucket]));
  const { ctx } = g, before = pixels(canvas);
  bs.forEach((b, i) => {
    ctx.fillStyle = b.bucket === "all" ? RESIDUAL : FORECAST;
    const y = g.sy(b.mse);
    ctx.fillRect(g.sx(i) - slot * 0.3, y, slot * 0.6, g.y1 - y);
  });
  canvas.dataset.drawnPixels = changed(before, pixels(canvas));
  ctx.fillStyle = "#1d2330"; ctx.textAlign = "center"; ctx.textBaseline = "bottom";
  bs.forEach((b, i) => ctx.fillText(b.mse.toFixed(3), g.sx(i), g.sy(b.mse) - 2));
}

// --- data -------------------------------------------------------------------

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(url + ": " + r.status + " " + (await r.text()).trim());
  return r.json();
}

function readHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  if (q.get("series")) state.series = q.get("series");
  if (q.get("field")) state.fieldName = q.get("field");
  // without: the parts toggled off, by their legend label ("7d cycle").
  if (q.get("without")) state.without = new Set(q.get("without").split(",").filter((s) => s));
}

function writeHash() {
  const q = new URLSearchParams({ series: state.series });
  const f = state.forecast;
  if (f && f.fields.length > 1) q.set("field", f.fields[state.field]);
  if (state.without.size) q.set("without", [...state.without].join(","));
  history.replaceState(null, "", "#" + q.toString());
}

async function refreshList() {
  const l = await getJSON("/live/series");
  state.list = l.series.map((s) => s.series);
  const sel = $("series");
  if (sel.options.length !== state.list.length || state.list.some((s, i) => sel.options[i].value !== s)) {
    sel.replaceChildren(...state.list.map((s) => new Option(s, s)));
  }
  if (!state.list.includes(state.series)) state.series = state.list[0] || "";
  sel.value = state.series;
}

function updateFields(f) {
  const sel = $("field");
  $("field-label").hidden = f.fields.length < 2;
  if (sel.options.length !== f.fields.length || f.fields.some((n, i) => sel.options[i].value !== n)) {
    sel.replaceChildren(...f.fields.map((n, i) => new Option(n, i)));
  }
  if (state.fieldName !== undefined) {
    const i = f.fields.indexOf(state.fieldName);
    if (i >= 0) state.field = i;
    state.fieldName = undefined;
  }
  if (state.field >= f.fields.length) state.field = 0;
  sel.value = String(state.field);
}

function draw() {
  const f = state.forecast;
  if (f) {
    updateFields(f);
    drawForecast(f, state.field);
    drawParts(f, state.field);
  }
  const cad = f ? f.cadence_seconds : 0;
  drawSpectrum(state.online, cad);
  drawError(state.online);
  drawIntervals(state.online);
  document.body.dataset.updates = Number(document.body.dataset.updates) + 1;
  document.body.dataset.series = f ? f.series : "";
  document.body.dataset.field = f ? f.fields[state.field] : "";
}

function status(text, error) {
  const s = $("status");
  s.textContent = text; s.classList.toggle("error", !!error);
}

async function poll() {
  try {
    if (state.polls % LIST_EVERY === 0 || !state.series) await refreshList();
    state.polls++;
    const asked = state.series;
    let [f, online] = await Promise.all([
      state.series ? getJSON("/live/forecast?series=" + encodeURIComponent(state.series)).catch((e) => {
        if (String(e.message).includes(" 404 ")) { state.polls = 0; return null; } // gone: refresh the list next time
        throw e;
      }) : null,
      getJSON("/online?worst=0").catch(() => null),
    ]);
    // The user may have picked another series meanwhile (poll0 fetched
    // it): this answer is about the old one.
    if (asked !== state.series) f = state.forecast;
    state.forecast = f; state.online = online;
    draw();
    if (f) {
      writeHash();
      status(f.series + " · forecast from " + fmtTime(Date.parse(f.ts), Math.min(f.cadence_seconds, 60)) + " · model v" + f.model_version +
        " · " + f.forecasts + " forecasts of this series · updated " + new Date(f.updated).toLocaleTimeString());
    } else {
      status(state.list.length ? "waiting for a forecast of " + state.series + "…" : "waiting for the first forecast…");
    }
  } catch (e) {
    status("cannot reach the service: " + e.message, true);
  }
  setTimeout(poll, POLL_MS);
}

readHash();
$("series").addEventListener("change", (e) => { state.series = e.target.value; state.polls = 1; poll0(); });
$("field").addEventListener("change", (e) => { state.field = Number(e.target.value); writeHash(); draw(); });
window.addEventListener("resize", () => draw());
// poll0 refreshes at once after a change of series, without starting a
// second polling loop.
let pending = false;
async function poll0() {
  if (pending) return;
  pending = true;
  try {
    state.forecast = await getJSON("/live/forecast?series=" + encodeURIComponent(state.series));
    draw(); writeHash();
  } catch (e) { status(e.message, true); }
  pending = false;
}
poll();
